#include "base/large_buffers.hpp"

#include <malloc.h>

namespace sb::base {

namespace {
// Below this a buffer stays on the heap: small messages cost no system call.
constexpr int kOwnMappingBytes = 256 * 1024;
}  // namespace

void return_large_buffers() {
  mallopt(M_MMAP_THRESHOLD, kOwnMappingBytes);
}

}  // namespace sb::base
