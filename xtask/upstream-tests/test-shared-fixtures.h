/* Upstream hipFile system tests harness (xtask/upstream-tests/run.sh), our own: the fixtures
 * driver.cpp names. DriverInit: a test that opens the driver (implicitly or not); the driver is
 * closed at its end. DriverNoInit: a test whose calls must leave the driver closed. */
#pragma once
#include "hipfile.h"
#include <gtest/gtest.h>

struct DriverInit : public testing::Test {
    void SetUp() override { ASSERT_EQ(hipFileUseCount(), 0); }
    void TearDown() override
    {
        while (hipFileUseCount() > 0) {
            (void)hipFileDriverClose();
        }
    }
};

struct DriverNoInit : public testing::Test {
    void SetUp() override { ASSERT_EQ(hipFileUseCount(), 0); }
    void TearDown() override
    {
        EXPECT_EQ(hipFileUseCount(), 0) << "the test's calls opened the driver";
        while (hipFileUseCount() > 0) {
            (void)hipFileDriverClose();
        }
    }
};
