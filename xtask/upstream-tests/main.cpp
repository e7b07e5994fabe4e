/* Upstream hipFile system tests harness (xtask/upstream-tests/run.sh), our own: gtest's main with the options object the tests refer to. */
#include "test-options.h"
#include <gtest/gtest.h>
SystemTestOptions test_env;
int main(int argc, char **argv)
{
    testing::InitGoogleTest(&argc, argv);
    test_env.parseTestOptions(argc, argv);
    return RUN_ALL_TESTS();
}
