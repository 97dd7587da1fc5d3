// Gives the heap's free memory back to the system once large messages have passed.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <cstddef>

namespace sb::base {

// glibc keeps the memory of large buffers once freed, for the next ones: a burst of large
// replies is fast, but the memory stays after it (a worker that passed 64 replies of 16 MiB
// held 36 MiB at rest, hundreds under a slow supervisor). Every `interval`, when the heap
// holds more than `slack` free, malloc_trim gives it back (docs/robustness.md, "Memory"):
// at most one return a burst pays for again per interval.
class HeapTrimmer {
 public:
  explicit HeapTrimmer(boost::asio::io_context& io,
                       std::chrono::milliseconds interval = std::chrono::seconds(2),
                       std::size_t slack = 4 * 1024 * 1024);
  void start();
  void stop();  // the loop may end: no timer of ours is left

 private:
  void arm();

  boost::asio::steady_timer timer_;
  std::chrono::milliseconds interval_;
  std::size_t slack_;
};

}  // namespace sb::base
