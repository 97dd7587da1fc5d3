// The queue in front of a fake's WebSocket writes. Beast allows one async_write in flight
// per stream, so messages wait here in order and the message being written stays alive
// (it is front()) until its write completes, even when the queue is ended meanwhile.
//
//   void send(Message m) { if (outbox_.push(std::move(m))) write_front(); }
//   void write_front() { ws_.async_write(buffer(outbox_.front()),
//                        [self](error_code e, size_t) { if (self->outbox_.written(!e))
//                        self->write_front(); }); }
#pragma once

#include <deque>
#include <utility>

namespace harness {

template <class Message>
class Outbox {
 public:
  // Queues `message`; true when nothing is being written, so the caller starts writing
  // front(). After end(), drops it.
  bool push(Message message) {
    if (ended_) return false;
    messages_.push_back(std::move(message));
    if (writing_) return false;
    writing_ = true;
    return true;
  }

  const Message& front() const { return messages_.front(); }

  // The write of front() completed (`ok`: without error). True when the caller writes
  // front() next. A failed write ends the queue.
  bool written(bool ok) {
    writing_ = false;
    messages_.pop_front();
    if (!ok) end();
    writing_ = !ended_ && !messages_.empty();
    return writing_;
  }

  // Nothing more is written: what waits is dropped; a write in flight keeps its message.
  void end() {
    ended_ = true;
    if (writing_) {
      messages_.erase(messages_.begin() + 1, messages_.end());
    } else {
      messages_.clear();
    }
  }

  bool ended() const { return ended_; }

 private:
  std::deque<Message> messages_;
  bool writing_ = false;
  bool ended_ = false;
};

}  // namespace harness
