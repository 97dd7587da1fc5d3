// How the process's allocator treats buffers of megabytes.
#pragma once

namespace sb::base {

// Gives every large buffer a mapping of its own, returned to the system when it is freed.
// glibc otherwise serves them from the heap once the first has been freed (its threshold
// follows the largest block freed) and keeps that memory after a burst of large replies
// has gone (docs/robustness.md, "Memory"). Called once, first thing in main.
void return_large_buffers();

}  // namespace sb::base
