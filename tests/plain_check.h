/* SPDX-License-Identifier: MIT */
/*
 * tests/plain_check.h — CHECK for the plain (non-Criterion) test programs that must run
 * under TSan, where Criterion's runner aborts (Snaipe/Criterion#274): print where and why,
 * exit 1. Never used in Criterion tests.
 */
#ifndef TESTS_PLAIN_CHECK_H
#define TESTS_PLAIN_CHECK_H

#include <stdio.h>
#include <stdlib.h>

#define CHECK(cond, ...)                                                                           \
        do {                                                                                       \
                if (!(cond)) {                                                                     \
                        fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);                       \
                        fprintf(stderr, __VA_ARGS__);                                              \
                        fputc('\n', stderr);                                                       \
                        exit(1);                                                                   \
                }                                                                                  \
        } while (0)

#endif /* TESTS_PLAIN_CHECK_H */
