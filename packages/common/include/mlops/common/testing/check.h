/* The pass / fail counter of the packages' C and C++ test programs (the ctest C API tests and the
 * kernel-on-host runners): CHECK(cond, fmt, ...) counts a pass, or prints "FAIL file:line: <message>"
 * and counts a failure; each program ends by printing "N passed, M failed", which its pytest wrapper
 * reads. One definition instead of a copy in every test file. Test-only: cmake/mlops.cmake leaves
 * mlops/common/testing/ out of the installed headers. */
#ifndef MLOPS_COMMON_TESTING_CHECK_H
#define MLOPS_COMMON_TESTING_CHECK_H

#include <stdio.h>

static int passed, failed;

#define CHECK(cond, ...)                          \
  do {                                            \
    if (cond) {                                   \
      ++passed;                                   \
    } else {                                      \
      ++failed;                                   \
      printf("FAIL %s:%d: ", __FILE__, __LINE__); \
      printf(__VA_ARGS__);                        \
      printf("\n");                               \
    }                                             \
  } while (0)

#endif
