// The frames a worker sends the supervisor: each round-trips through its codec, and what
// a worker may not send is Malformed with the reason the supervisor's log line gives.
#include <fcntl.h>
#include <gtest/gtest.h>

#include "ipc/parked_session.hpp"
#include "ipc/worker_frames.hpp"

namespace sb::ipc {
namespace {

std::string reason_for(Frame frame) {
  auto decoded = decode_worker_frame(std::move(frame));
  const auto* malformed = std::get_if<Malformed>(&decoded);
  return malformed ? malformed->reason : "";
}

TEST(WorkerFrames, EachRoundTrips) {
  auto hello = decode_worker_frame(encode(Hello{.pid = 42, .protocol = 4, .build = "abc"}));
  ASSERT_TRUE(std::holds_alternative<Hello>(hello));
  EXPECT_EQ(std::get<Hello>(hello).pid, 42);
  EXPECT_EQ(std::get<Hello>(hello).build, "abc");

  auto reply = decode_worker_frame(
      encode(Reply{.call_id = 5,
                   .outcome = {CallStatus::kReplied, 2, ReplyKind::kRpcError, -32050},
                   .body = "{}"}));
  ASSERT_TRUE(std::holds_alternative<Reply>(reply));
  EXPECT_EQ(std::get<Reply>(reply).outcome.error_code, -32050);
  EXPECT_EQ(std::get<Reply>(reply).body, "{}");

  auto message = decode_worker_frame(
      encode(Message{.call_id = 0, .meta = {MessageKind::kNotification, 0}, .body = "{}"}));
  ASSERT_TRUE(std::holds_alternative<Message>(message));

  auto parked = decode_worker_frame(encode(Parked{"record"}));
  ASSERT_TRUE(std::holds_alternative<Parked>(parked));
  EXPECT_EQ(std::get<Parked>(parked).record, "record");
  EXPECT_TRUE(std::holds_alternative<Parked>(decode_worker_frame(encode(Parked{}))));

  auto event = decode_worker_frame(encode(SessionEvent{AttachEvent{"10.0.0.1:5", 3}}));
  ASSERT_TRUE(std::holds_alternative<SessionEvent>(event));
  const auto& attach = std::get<AttachEvent>(std::get<SessionEvent>(event));
  EXPECT_EQ(attach.peer, "10.0.0.1:5");
  EXPECT_EQ(attach.generation, 3u);
}

TEST(WorkerFrames, WhatAWorkerMayNotSendIsMalformed) {
  EXPECT_EQ(reason_for(Frame{.type = static_cast<FrameType>(999)}),
            "a frame of type 999, which a worker does not send");
  EXPECT_EQ(reason_for(Frame{.type = FrameType::kCall, .call_id = 1}),
            "a frame of type 3, which a worker does not send");
  EXPECT_EQ(reason_for(Frame{.type = FrameType::kHello, .meta = R"({"pid":1})"}),
            "a malformed hello");
  EXPECT_EQ(reason_for(Frame{.type = FrameType::kReply, .call_id = 1, .meta = "{}"}),
            "a reply with a malformed meta");
  EXPECT_EQ(reason_for(encode(Reply{.call_id = 0, .outcome = {CallStatus::kTimeout}})),
            "a reply without a call id");
  EXPECT_EQ(reason_for(encode(Reply{.call_id = 1, .outcome = {CallStatus::kReplied}})),
            "a reply whose body does not fit its status");
  EXPECT_EQ(
      reason_for(encode(Message{.call_id = 0, .meta = {MessageKind::kProgress}, .body = "{}"})),
      "a message for no call that is not a notification");
  EXPECT_EQ(reason_for(encode(Message{.call_id = 1})), "an empty message");
  Frame with_descriptor = encode(Reply{.call_id = 1, .outcome = {CallStatus::kTimeout}});
  with_descriptor.fd = base::UniqueFd(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  EXPECT_EQ(reason_for(std::move(with_descriptor)), "a frame that carries a descriptor");
  Frame parked = encode(Parked{"record"});
  parked.meta.assign(1, 'x');  // `= "x"` trips g++ 12's false -Wrestrict
  EXPECT_EQ(reason_for(std::move(parked)), "a parked frame with a meta");
  EXPECT_EQ(reason_for(encode(Parked{std::string(kMaxParkedSessionBytes + 1, 'x')})),
            "a parked record over its bound");
  Frame event = encode(SessionEvent{AttachEvent{"p", 1}});
  event.call_id = 2;
  EXPECT_EQ(reason_for(std::move(event)), "an event with a meta or call id");
}

}  // namespace
}  // namespace sb::ipc
