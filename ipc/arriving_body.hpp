// A frame body still arriving: the channel that reads it appends, and whoever passes it on
// follows it before it is whole (docs/architecture.md, "Large replies"). Its bytes never
// move once allocated, so a write may point into them while more arrive.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <vector>

namespace sb::ipc {

class ArrivingBody {
 public:
  explicit ArrivingBody(std::size_t size);

  std::size_t size() const { return size_; }
  std::size_t arrived() const { return arrived_; }
  bool complete() const { return arrived_ == size_; }
  bool failed() const { return failed_; }
  bool ended() const { return complete() || failed(); }
  const char* data() const { return bytes_.get(); }
  // Runs after every arrival and once more if the body fails. Not kept when the body has
  // already ended: check ended() first.
  void follow(std::function<void()> on_change);

  // The reading channel's side.
  char* free_space() { return bytes_.get() + arrived_; }
  void arrived_more(std::size_t count);
  // The sender went away before the last byte: nothing more will come.
  void fail();

 private:
  void notify();

  std::unique_ptr<char[]> bytes_;
  std::size_t size_;
  std::size_t arrived_ = 0;
  bool failed_ = false;
  std::vector<std::function<void()>> followers_;
};

}  // namespace sb::ipc
