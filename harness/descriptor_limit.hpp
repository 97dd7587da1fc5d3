// A test or a measurement that holds a thousand sockets needs more descriptors than the
// usual soft limit of 1024: the soft limit raised to the hard one.
#pragma once

#include <sys/resource.h>

namespace harness {

inline void raise_descriptor_limit() {
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_cur >= limit.rlim_max) return;
  limit.rlim_cur = limit.rlim_max;
  ::setrlimit(RLIMIT_NOFILE, &limit);
}

}  // namespace harness
