#include "base/page_release.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>

namespace sb::base {

void release_pages(const void* start, std::size_t bytes) {
  const auto page = static_cast<std::uintptr_t>(::sysconf(_SC_PAGESIZE));
  const auto begin = reinterpret_cast<std::uintptr_t>(start);
  // Inward to whole pages: the bytes around the range belong to others (the allocator's
  // own records among them).
  const std::uintptr_t first = (begin + page - 1) & ~(page - 1);
  const std::uintptr_t last = (begin + bytes) & ~(page - 1);
  if (last <= first) return;
  ::madvise(reinterpret_cast<void*>(first), last - first, MADV_DONTNEED);
}

}  // namespace sb::base
