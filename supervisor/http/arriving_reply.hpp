// A plain response whose body is a large reply still arriving from its worker
// (docs/architecture.md, "Large replies"): the head (its Content-Length known from the
// frame) and the caller's id go out at once, then each part of the body as it arrives, one
// write at a time. The body always ends, whole or failed; a failed one ends the connection,
// and the caller sees a response shorter than its Content-Length.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <string>

#include "ipc/arriving_body.hpp"
#include "supervisor/bounds/reply_budget.hpp"
#include "supervisor/http/response_head.hpp"
#include "supervisor/http/types.hpp"
#include "supervisor/http/wire.hpp"

namespace sb::supervisor {

class ArrivingReply {
 public:
  // `ended(ok)` runs once: after the last byte was written, or when a write or the body
  // failed. The reply's lease (and its place in the computer's caps) is held until then.
  ArrivingReply(const Wire& wire, HttpResponse response, const Framing& framing,
                std::function<void(bool ok)> ended);
  ArrivingReply(const ArrivingReply&) = delete;
  ArrivingReply& operator=(const ArrivingReply&) = delete;

  void start();

 private:
  void write_arrived();
  std::size_t unsent() const;
  void end(bool ok);
  void release();

  Wire wire_;
  std::shared_ptr<ipc::ArrivingBody> body_;
  std::string head_;  // the response head and the caller's id: what goes before the body
  ReplyBudget::Lease lease_;
  std::function<void(bool ok)> ended_;
  std::size_t head_sent_ = 0;
  std::size_t body_sent_ = 1;  // its opening brace is never sent (ReplyText)
  bool writing_ = false;
  bool over_ = false;
};

}  // namespace sb::supervisor
