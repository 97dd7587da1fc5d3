#include "base/heap_trim.hpp"

#include <malloc.h>

namespace sb::base {

HeapTrimmer::HeapTrimmer(boost::asio::io_context& io, std::chrono::milliseconds interval,
                         std::size_t slack)
    : timer_(io), interval_(interval), slack_(slack) {}

void HeapTrimmer::start() {
  arm();
}

void HeapTrimmer::stop() {
  timer_.cancel();
}

void HeapTrimmer::arm() {
  timer_.expires_after(interval_);
  timer_.async_wait([this](const boost::system::error_code& error) {
    if (error) return;
    if (mallinfo2().fordblks > slack_) malloc_trim(0);
    arm();
  });
}

}  // namespace sb::base
