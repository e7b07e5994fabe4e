/* Small helpers shared by the C test programs: every failed check prints where and exits 1. */
#ifndef HIPFILE_TEST_COMMON_H
#define HIPFILE_TEST_COMMON_H

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(cond)                                                                    \
    do {                                                                               \
        if (!(cond)) {                                                                 \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond);   \
            exit(1);                                                                   \
        }                                                                              \
    } while (0)

/* A hipFileError_t call that must give exactly {expected, hipSuccess}. */
#define EXPECT_ERR(call, expected)                                                     \
    do {                                                                               \
        hipFileError_t e_ = (call);                                                    \
        if (e_.err != (expected) || e_.hip_drv_err != hipSuccess) {                    \
            fprintf(stderr, "%s:%d: %s gave {%d, %d}, expected {%d, 0}\n", __FILE__,  \
                    __LINE__, #call, (int)e_.err, (int)e_.hip_drv_err, (int)(expected)); \
            exit(1);                                                                   \
        }                                                                              \
    } while (0)

#define EXPECT_OK(call) EXPECT_ERR(call, hipFileSuccess)

#define HIP_OK(call) CHECK((call) == hipSuccess)

#endif
