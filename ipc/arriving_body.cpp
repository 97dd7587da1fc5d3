#include "ipc/arriving_body.hpp"

namespace sb::ipc {

// Not zero-filled: every byte is written by the channel before anyone may read it, and
// zeroing 16 MiB costs more than a millisecond.
ArrivingBody::ArrivingBody(std::size_t size)
    : bytes_(std::make_unique_for_overwrite<char[]>(size)), size_(size) {}

void ArrivingBody::follow(std::function<void()> on_change) {
  if (!ended()) followers_.push_back(std::move(on_change));
}

void ArrivingBody::arrived_more(std::size_t count) {
  if (failed_ || count == 0) return;
  arrived_ += count;
  notify();
  if (complete()) followers_.clear();
}

void ArrivingBody::fail() {
  if (ended()) return;
  failed_ = true;
  notify();
  followers_.clear();
}

// By index, each follower copied before it runs: a follower may add another.
void ArrivingBody::notify() {
  for (std::size_t index = 0; index < followers_.size(); ++index) {
    auto follower = followers_[index];
    follower();
  }
}

}  // namespace sb::ipc
