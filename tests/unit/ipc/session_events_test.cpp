// The vocabulary of a worker's audit events: exactly the table's fields, each of its type.
#include <gtest/gtest.h>

#include "ipc/session_events.hpp"

namespace sb::ipc {
namespace {

std::string reason_for(std::string_view body) {
  std::string reason;
  EXPECT_FALSE(decode_event_body(body, reason)) << body;
  return reason;
}

TEST(SessionEvents, EachEventRoundTripsWithItsNameAndFields) {
  const SessionEvent detach = DetachEvent{
      .peer = "p", .generation = 2, .code = 1006, .reason = "gone", .attached_for_secs = 9};
  EXPECT_EQ(event_name(detach), "vm_detach");
  EXPECT_EQ(event_fields(detach), (nlohmann::json{{"peer", "p"},
                                                  {"generation", 2},
                                                  {"code", 1006},
                                                  {"reason", "gone"},
                                                  {"attached_for_secs", 9}}));
  std::string reason;
  const auto back = decode_event_body(encode_event_body(detach), reason);
  ASSERT_TRUE(back) << reason;
  EXPECT_EQ(std::get<DetachEvent>(*back).reason, "gone");
  EXPECT_EQ(event_name(TakeoverEvent{}), "vm_takeover");
  EXPECT_EQ(event_name(TakenUpEvent{}), "vm_resumed");
  const auto resumed = decode_event_body(encode_event_body(TakenUpEvent{"p", 4}), reason);
  ASSERT_TRUE(resumed) << reason;
  EXPECT_EQ(std::get<TakenUpEvent>(*resumed).generation, 4u);
  EXPECT_EQ(event_name(AttachEvent{}), "vm_attach");
}

TEST(SessionEvents, AnythingElseIsRefusedWithItsReason) {
  EXPECT_EQ(reason_for(R"({"event":"vm_attach","peer":"p","generation":1,"computer":"x"})"),
            "a vm_attach event with fields of its own");
  EXPECT_EQ(reason_for(R"({"event":"vm_attach","peer":"p","generation":-1})"),
            "a vm_attach event with a bad generation");
  EXPECT_EQ(reason_for(R"({"event":"vm_attach","peer":7,"generation":1})"),
            "a vm_attach event with a bad peer");
  EXPECT_EQ(reason_for(R"({"event":"config_reloaded"})"), "an event it may not report");
  EXPECT_EQ(reason_for(R"({"peer":"p"})"), "an event without its name");
  EXPECT_EQ(reason_for("[]"), "an event that is not one JSON object");
  EXPECT_EQ(reason_for(std::string(4097, ' ')), "an event over 4 KiB");
  const std::string long_peer(kMaxEventText + 1, 'a');
  EXPECT_EQ(reason_for(R"({"event":"vm_attach","generation":1,"peer":")" + long_peer + "\"}"),
            "a vm_attach event with a bad peer");
}

}  // namespace
}  // namespace sb::ipc
