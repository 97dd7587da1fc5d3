// End to end: resumable event streams (docs/protocol.md, "Resumable streams"). A
// 2025-11-25 caller's call stream starts with a priming event and gives every event an
// id; a caller that hangs up comes back with GET and Last-Event-ID for what it missed and
// the rest of the call, which went on meanwhile; one that never comes back has its call
// cancelled when the resume window ends; a quiet call is paused for its caller to poll;
// nobody else can take a stream up, and older revisions are answered as before. A GET's
// stream of the messages that belong to no call is resumed alike.
#include <gtest/gtest.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tests/e2e/fidelity_helpers.hpp"

namespace sbtest {
namespace {

const std::string kSession = "s1";
const Headers kResumable =
    with(with(kAcceptBoth, "MCP-Protocol-Version", "2025-11-25"), "Mcp-Session-Id", kSession);

// The stream part of an event id ("<stream>-<event>").
std::string stream_of(const std::string& event_id) {
  return event_id.substr(0, event_id.rfind('-'));
}

class ResumableStreams : public Fidelity {
 protected:
  // A 2025-11-25 GET on alpha as `who`: naming no event, it asks for the messages that
  // belong to no call; naming one, it takes up the stream after it.
  static std::unique_ptr<OpenCall> get(const SwitchboardProcess& sb, const Secret& who,
                                       const std::string& session = kSession,
                                       const std::string& last_event_id = {}) {
    HttpRequest request{.method = "GET",
                        .target = kPath,
                        .token = who.secret,
                        .headers = {{"Accept", "text/event-stream"},
                                    {"MCP-Protocol-Version", "2025-11-25"},
                                    {"Mcp-Session-Id", session}}};
    if (!last_event_id.empty()) request.headers.emplace_back("Last-Event-ID", last_event_id);
    return std::make_unique<OpenCall>(sb.port(), std::move(request));
  }

  static std::unique_ptr<OpenCall> resume(const SwitchboardProcess& sb, const Secret& who,
                                          const std::string& last_event_id,
                                          const std::string& session = kSession) {
    return get(sb, who, session, last_event_id);
  }

  // The priming event that opens a resumable stream: an id, a retry time and no data.
  static std::string expect_priming(OpenCall& call) {
    const auto priming = call.next_event();
    if (!priming) {
      ADD_FAILURE() << "the stream ended before its priming event";
      return {};
    }
    EXPECT_EQ(priming->data, "") << priming->raw;
    EXPECT_EQ(priming->retry, "1000") << priming->raw;
    EXPECT_TRUE(priming->id.ends_with("-0")) << priming->raw;
    return priming->id;
  }

  static bool cancelled(const FakeComputer& fake) { return !cancels(fake).empty(); }
};

json list_changed(const std::string& list) {
  return json{{"jsonrpc", "2.0"}, {"method", "notifications/" + list + "/list_changed"}};
}

TEST_F(ResumableStreams, ACallerThatComesBackGetsWhatItMissedAndTheCallWentOn) {
  SwitchboardProcess sb(config());
  auto fake = attach_alpha(sb);
  ASSERT_TRUE(fake);
  auto call = std::make_unique<OpenCall>(
      sb.port(), post(kPath, alice_.secret, call_with_token(1, "echo", hold(1), "t"), kResumable));
  const json seen = computer_call(*fake, hold(1));
  ASSERT_FALSE(seen.is_null());
  fake->send_text(progress_notification(token_of(seen), 1, "one").dump());
  expect_event_stream_head(call->head());
  const std::string priming = expect_priming(*call);
  const std::string stream = stream_of(priming);
  const auto first = call->next_event();
  ASSERT_TRUE(first);
  EXPECT_EQ(first->id, stream + "-1");
  EXPECT_EQ(first->json(), progress_notification("t", 1, "one"));

  call.reset();  // the caller's connection breaks
  fake->send_text(progress_notification(token_of(seen), 2, "two").dump());
  fake->answer_echo(seen);

  auto resumed = resume(sb, alice_, first->id);
  expect_event_stream_head(resumed->head());
  const auto second = resumed->next_event();
  ASSERT_TRUE(second);
  EXPECT_EQ(second->id, stream + "-2");
  EXPECT_EQ(second->json(), progress_notification("t", 2, "two"));
  const auto answer = resumed->next_event();
  ASSERT_TRUE(answer);
  EXPECT_EQ(answer->id, stream + "-3");
  EXPECT_EQ(answer->json()["id"], 1);
  EXPECT_EQ(echoed(answer->json()), hold(1)) << answer->raw;
  EXPECT_FALSE(resumed->next_event()) << "the stream ends with the response";

  const auto line = sb.audit().wait_for("call", fields_equal({{"principal", "alice"}}));
  ASSERT_TRUE(line);
  EXPECT_EQ((*line)["outcome"], "ok");
  EXPECT_FALSE(cancelled(*fake)) << "the hang-up cancelled the call";
}

// The ordinary reconnect: the response comes while the caller is away (here the stream was
// paused, so the switchboard holds no connection for it for sure). Given once, it gives
// the call's place in the computer's cap back; the stream is gone after it, so the same id
// again opens the stream of messages that belong to no call (docs/protocol.md, "Resumable
// streams").
TEST_F(ResumableStreams, AResponseIsGivenOnceAndItsPlaceInTheCapsComesBack) {
  SwitchboardProcess sb(config(/*alpha_max=*/1).timeout_setting("poll_secs", 1));
  auto fake = attach_alpha(sb);
  ASSERT_TRUE(fake);
  auto call = std::make_unique<OpenCall>(
      sb.port(), post(kPath, alice_.secret, tool_call(7, "echo", hold(1)), kResumable));
  const json seen = computer_call(*fake, hold(1));
  ASSERT_FALSE(seen.is_null());
  const std::string priming = expect_priming(*call);
  EXPECT_FALSE(call->next_event()) << "paused after its priming event";
  call.reset();
  fake->answer_echo(seen);
  ASSERT_TRUE(sb.audit().wait_for("call", fields_equal({{"principal", "alice"}})));

  auto resumed = resume(sb, alice_, priming);
  const auto answer = resumed->next_event();
  ASSERT_TRUE(answer);
  EXPECT_EQ(answer->json()["id"], 7) << answer->raw;
  EXPECT_FALSE(resumed->next_event()) << "the stream ends with the response";
  resumed.reset();

  auto again = resume(sb, alice_, priming);
  EXPECT_NE(stream_of(expect_priming(*again)), stream_of(priming))
      << "the response was given twice";
  expect_shares_free(sb, *fake);
}

TEST_F(ResumableStreams, ResumingFromThePrimingEventReplaysEverythingAndAnotherCallerGetsNothing) {
  SwitchboardProcess sb(config());
  auto fake = attach_alpha(sb);
  ASSERT_TRUE(fake);
  auto call = std::make_unique<OpenCall>(
      sb.port(), post(kPath, alice_.secret, call_with_token(1, "echo", hold(1), "t"), kResumable));
  const json seen = computer_call(*fake, hold(1));
  ASSERT_FALSE(seen.is_null());
  fake->send_text(progress_notification(token_of(seen), 1, "one").dump());
  const std::string priming = expect_priming(*call);
  ASSERT_TRUE(call->next_event());

  // Owner may call alpha too, but the stream is alice's: owner's GET with alice's id is
  // the stream of messages that belong to no call, as it would be for an unknown id, and
  // alice's own GET in another MCP session is too.
  std::vector<std::unique_ptr<OpenCall>> others;
  others.push_back(resume(sb, owner_, priming));
  others.push_back(resume(sb, alice_, priming, "elsewhere"));
  others.push_back(resume(sb, alice_, stream_of(priming) + "x-1"));
  for (const auto& other : others) expect_event_stream_head(other->head());
  // None of them took the stream: the call's own connection still has it.
  fake->send_text(progress_notification(token_of(seen), 2, "two").dump());
  const auto second = call->next_event();
  ASSERT_TRUE(second);
  EXPECT_EQ(second->json(), progress_notification("t", 2, "two"));

  // alice's second connection takes the stream over from the first, which ends.
  auto resumed = resume(sb, alice_, priming);
  expect_event_stream_head(resumed->head());
  for (int progress : {1, 2}) {
    const auto replayed = resumed->next_event();
    ASSERT_TRUE(replayed);
    EXPECT_EQ(replayed->json(),
              progress_notification("t", progress, progress == 1 ? "one" : "two"));
  }
  EXPECT_FALSE(call->next_event()) << "the earlier connection still holds the stream";
  fake->answer_echo(seen);
  const auto answer = resumed->next_event();
  ASSERT_TRUE(answer);
  EXPECT_EQ(echoed(answer->json()), hold(1)) << answer->raw;
}

TEST_F(ResumableStreams, ACallerThatNeverComesBackHasItsCallCancelledWhenTheWindowEnds) {
  SwitchboardProcess sb(config(/*alpha_max=*/1).timeout_setting("resume_secs", 1));
  auto fake = attach_alpha(sb);
  ASSERT_TRUE(fake);
  auto call = std::make_unique<OpenCall>(
      sb.port(), post(kPath, alice_.secret, call_with_token(1, "echo", hold(1), "t"), kResumable));
  const json seen = computer_call(*fake, hold(1));
  ASSERT_FALSE(seen.is_null());
  fake->send_text(progress_notification(token_of(seen), 1, "one").dump());
  expect_priming(*call);
  call.reset();
  EXPECT_EQ(wait_cancel(*fake, seen["id"]), expected_cancel(seen["id"], "caller disconnected"));
  const auto line = sb.audit().wait_for("call", fields_equal({{"principal", "alice"}}));
  ASSERT_TRUE(line);
  EXPECT_EQ((*line)["outcome"], "abandoned");
  expect_shares_free(sb, *fake);
}

TEST_F(ResumableStreams, AQuietCallIsPausedAndItsCallerPollsForTheResponse) {
  SwitchboardProcess sb(config().timeout_setting("poll_secs", 1));
  auto fake = attach_alpha(sb);
  ASSERT_TRUE(fake);
  OpenCall call(sb.port(), post(kPath, alice_.secret, tool_call(7, "echo", hold(1)), kResumable));
  const json seen = computer_call(*fake, hold(1));
  ASSERT_FALSE(seen.is_null());
  // Nothing to say for a second: the stream is its priming event alone, then its end.
  expect_event_stream_head(call.head());
  const std::string priming = expect_priming(call);
  EXPECT_FALSE(call.next_event());

  auto resumed = resume(sb, alice_, priming);
  fake->answer_echo(seen);
  const auto answer = resumed->next_event();
  ASSERT_TRUE(answer);
  EXPECT_EQ(answer->id, stream_of(priming) + "-1");
  EXPECT_EQ(answer->json()["id"], 7);
  EXPECT_EQ(echoed(answer->json()), hold(1)) << answer->raw;
  EXPECT_FALSE(cancelled(*fake));
}

TEST_F(ResumableStreams, TheStreamOfAGetIsResumedLikeACallsAndTakenUpByTheNextGet) {
  SwitchboardProcess sb(config());
  auto fake = attach_alpha(sb);
  ASSERT_TRUE(fake);
  auto stream = get(sb, alice_);
  expect_event_stream_head(stream->head());
  const std::string priming = expect_priming(*stream);
  const std::string id = stream_of(priming);
  fake->send_text(list_changed("tools").dump());
  const auto first = stream->next_event();
  ASSERT_TRUE(first);
  EXPECT_EQ(first->id, id + "-1");
  EXPECT_EQ(first->json(), list_changed("tools"));

  // Lost, and what came meanwhile is replayed to the caller that names its last event.
  stream.reset();
  fake->send_text(list_changed("prompts").dump());
  auto resumed = resume(sb, alice_, first->id);
  expect_event_stream_head(resumed->head());
  const auto missed = resumed->next_event();
  ASSERT_TRUE(missed);
  EXPECT_EQ(missed->id, id + "-2");
  EXPECT_EQ(missed->json(), list_changed("prompts"));

  // Lost again: a GET naming no event takes the stream up where it stands, rather than
  // being told a stream is open (which it is, until the switchboard sees the loss).
  resumed.reset();
  std::unique_ptr<OpenCall> again;
  EXPECT_TRUE(eventually([&] {
    again = get(sb, alice_);
    return again->head().status == 200;
  }));
  ASSERT_TRUE(again);
  expect_event_stream_head(again->head());
  fake->send_text(list_changed("tools").dump());
  const auto next = again->next_event();
  ASSERT_TRUE(next);
  EXPECT_EQ(stream_of(next->id), id) << "the same stream, taken up";
  EXPECT_EQ(next->json(), list_changed("tools"));
  // While a connection holds it, another GET naming no event is refused, as before.
  EXPECT_EQ(get(sb, alice_)->head().status, 409);
}

TEST_F(ResumableStreams, OlderRevisionsAndPlainJsonRepliesAreAsBefore) {
  SwitchboardProcess sb(config());
  auto fake = attach_alpha(sb);
  ASSERT_TRUE(fake);
  // A reply with nothing before it is plain JSON, even for a caller that could resume.
  const auto plain =
      http(sb.port(), post(kPath, alice_.secret, tool_call(1, "echo", json{{"n", 1}}), kResumable));
  expect_plain_json(plain);

  // 2025-06-18 takes no priming event: its events carry no id, and its hang-up cancels.
  auto call = std::make_unique<OpenCall>(
      sb.port(), post(kPath, alice_.secret, call_with_token(2, "echo", hold(2), "t"),
                      with(kAcceptBoth, "MCP-Protocol-Version", "2025-06-18")));
  const json seen = computer_call(*fake, hold(2));
  ASSERT_FALSE(seen.is_null());
  fake->send_text(progress_notification(token_of(seen), 1, "one").dump());
  const auto event = call->next_event();
  ASSERT_TRUE(event);
  EXPECT_EQ(event->id, "");
  EXPECT_EQ(event->json(), progress_notification("t", 1, "one"));
  call.reset();
  EXPECT_EQ(wait_cancel(*fake, seen["id"]), expected_cancel(seen["id"], "caller disconnected"));
}

}  // namespace
}  // namespace sbtest
