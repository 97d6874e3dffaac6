// Shared by the libFuzzer targets: an invariant that does not hold is a
// crash (libFuzzer keeps the input as an artifact), with the condition
// printed first so the report says which one.
#pragma once

#include <cstdio>

#define FUZZ_CHECK(cond)                                                                   \
    do {                                                                                   \
        if (!(cond)) {                                                                     \
            std::fprintf(stderr, "invariant failed: %s (%s:%d)\n", #cond, __FILE__, __LINE__); \
            __builtin_trap();                                                              \
        }                                                                                  \
    } while (0)
