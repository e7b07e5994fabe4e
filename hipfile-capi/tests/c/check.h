/* CHECK(cond): a failed check prints where and exits 1. Shared by the C test programs, those
 * written for hipFile (common.h) and the one written for cuFile alone (cufile.c). */
#ifndef HIPFILE_TEST_CHECK_H
#define HIPFILE_TEST_CHECK_H

#include <stdio.h>
#include <stdlib.h>

#define CHECK(cond)                                                                    \
    do {                                                                               \
        if (!(cond)) {                                                                 \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond);   \
            exit(1);                                                                   \
        }                                                                              \
    } while (0)

#endif
