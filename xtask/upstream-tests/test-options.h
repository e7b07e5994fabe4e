/* Upstream hipFile system tests harness (xtask/upstream-tests/run.sh), our own: the options the system tests read (a scratch directory). */
#pragma once
#include <cstdlib>
#include <string>
struct SystemTestOptions {
    std::string ais_capable_dir{"."};
    int sleep_seconds{0};
    void parseTestOptions(int, char **)
    {
        if (const char *dir = std::getenv("HIPFILE_TEST_DIR")) {
            ais_capable_dir = dir;
        }
    }
};
