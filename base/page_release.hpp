// Giving the memory of a buffer that is kept but not in use back to the system.
#pragma once

#include <cstddef>

namespace sb::base {

// The whole pages inside [start, start + bytes) go back to the system: the range stays
// mapped and whatever next writes to it gets fresh zeroed pages. Only for memory that
// holds nothing anyone will read, and that nothing writes into at the time.
void release_pages(const void* start, std::size_t bytes);

}  // namespace sb::base
