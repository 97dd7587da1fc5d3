// A broken promise of the code under test is a finding like a crash: the check traps, and
// libFuzzer keeps the input. Unlike assert(), it stays on whatever the build type.
#pragma once

#define FUZZ_CHECK(condition) \
  do {                        \
    if (!(condition)) {       \
      __builtin_trap();       \
    }                         \
  } while (false)
