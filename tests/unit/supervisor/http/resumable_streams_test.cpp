// Resumable streams (docs/protocol.md, "Resumable streams"): event ids read back, a stream
// taken up only by its owner with the events after the caller's last, the kept events
// bounded, a response kept for a caller that comes back and given once, a bounded number
// of take-ups, and a call cancelled once its caller has been gone for the resume window; a
// notification stream (a GET's) primed at once and taken up by the next GET while it waits.
#include "supervisor/http/resumable_streams.hpp"

#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>
#include <string>
#include <vector>

namespace sb::supervisor {
namespace {

TEST(EventIds, AreReadBackAsStreamAndNumber) {
  const auto position = parse_event_id("0a1bs7-12");
  ASSERT_TRUE(position);
  EXPECT_EQ(position->stream, "0a1bs7");
  EXPECT_EQ(position->event, 12u);
  for (const char* bad : {"", "-1", "s7-", "s7", "s7-x", "s7-1x", "s7-99999999999999999999"})
    EXPECT_FALSE(parse_event_id(bad)) << bad;
}

// What one connection was given: its events (id and text) and its response.
struct Seen {
  std::vector<std::pair<std::string, std::string>> events;
  std::vector<HttpResponse> responses;
  bool opened = false;
  Respond respond() {
    return [this](HttpResponse response) { responses.push_back(std::move(response)); };
  }
  SendEvent send() {
    return [this](std::string head, std::string body, std::string id) {
      if (head.empty() && body.empty() && id.empty()) {
        opened = true;
        return;
      }
      events.emplace_back(std::move(id), head + body);
    };
  }
};

class ResumableStreamsTest : public ::testing::Test {
 protected:
  boost::asio::io_context io;
  ReplyBudget budget{1 << 20};
  ResumableStreams streams{io.get_executor(), budget};
  ResumableStream::Limits limits{.replay_events = 2,
                                 .resume_window = std::chrono::seconds(30),
                                 .poll_after = std::chrono::seconds(0)};
  bool abandoned = false;

  HttpResponse reply(std::string body) {
    HttpResponse response;
    response.body = std::move(body);
    return response;
  }
};

TEST_F(ResumableStreamsTest, OnlyItsOwnerTakesAStreamUpAndGetsTheKeptEventsAfterItsLast) {
  Seen first;
  auto stream = streams.open("alice", limits, first.respond(), first.send());
  const OnHangUp hang_up = stream->hold([this] { abandoned = true; });
  const SendEvent events = stream->events();
  for (const char* text : {"{1}", "{2}", "{3}"}) events("", text, "");
  ASSERT_EQ(first.events.size(), 4u);  // the priming event, then each with its id
  const std::string id = first.events[0].first;
  EXPECT_EQ(first.events[0].second, "");
  const auto position = parse_event_id(id);
  ASSERT_TRUE(position);
  EXPECT_EQ(first.events[3].first, position->stream + "-3");

  hang_up();
  EXPECT_FALSE(abandoned) << "a caller given an id may come back";
  Seen other;
  EXPECT_FALSE(streams.resume("bob", *position, other.respond(), other.send()));
  Seen again;
  EXPECT_TRUE(streams.resume("alice", *position, again.respond(), again.send()));
  EXPECT_TRUE(again.opened);
  // Two events are kept: the first is lost to a caller that comes back from the start.
  ASSERT_EQ(again.events.size(), 2u);
  EXPECT_EQ(again.events[0], std::make_pair(position->stream + "-2", std::string("{2}")));
  EXPECT_EQ(again.events[1], std::make_pair(position->stream + "-3", std::string("{3}")));

  stream->responses()(reply("{4}"));
  ASSERT_EQ(again.responses.size(), 1u);
  EXPECT_EQ(again.responses[0].event_id, position->stream + "-4");
  EXPECT_EQ(again.responses[0].body, "{4}");
  EXPECT_TRUE(first.responses.empty());
  EXPECT_FALSE(abandoned);
}

TEST_F(ResumableStreamsTest, AResponseNobodyWasThereForWaitsForTheCallersReturn) {
  Seen first;
  auto stream = streams.open("alice", limits, first.respond(), first.send());
  const OnHangUp hang_up = stream->hold([this] { abandoned = true; });
  stream->events()("", "{1}", "");
  hang_up();
  stream->responses()(reply("{2}"));
  Seen again;
  ASSERT_TRUE(streams.resume("alice",
                             EventPosition{parse_event_id(first.events[1].first)->stream, 1},
                             again.respond(), again.send()));
  EXPECT_TRUE(again.events.empty());
  ASSERT_EQ(again.responses.size(), 1u);
  EXPECT_EQ(again.responses[0].body, "{2}");
  EXPECT_FALSE(abandoned);
}

// Given once, with what it holds (its lease on the budget, and with it the call's place in
// the computer's caps): the stream ends with it, and its id names nothing any more.
TEST_F(ResumableStreamsTest, AKeptResponseIsGivenOnceWithItsLeaseAndTheStreamEnds) {
  Seen first;
  auto stream = streams.open("alice", limits, first.respond(), first.send());
  const OnHangUp hang_up = stream->hold([this] { abandoned = true; });
  stream->events()("", "{1}", "");
  hang_up();
  HttpResponse response = reply("{2}");
  response.lease = *budget.reserve(1000);
  stream->responses()(std::move(response));
  EXPECT_EQ(budget.held(), 1000u + 3u) << "the response's lease and the kept event's";
  const EventPosition from{parse_event_id(first.events[1].first)->stream, 1};
  Seen again;
  ASSERT_TRUE(streams.resume("alice", from, again.respond(), again.send()));
  ASSERT_EQ(again.responses.size(), 1u);
  EXPECT_EQ(budget.held(), 1000u) << "the kept event is dropped with the stream";
  again.responses.clear();
  EXPECT_EQ(budget.held(), 0u) << "the lease went with the response";
  EXPECT_EQ(streams.size(), 0u);
  Seen later;
  EXPECT_FALSE(streams.resume("alice", from, later.respond(), later.send()));
  EXPECT_FALSE(abandoned);
}

// Each take-up restarts the resume window, a bounded number of times: past them the stream
// is as one that does not exist, and ends with the window that runs.
TEST_F(ResumableStreamsTest, AStreamIsTakenUpABoundedNumberOfTimes) {
  limits.resume_window = std::chrono::seconds(1);
  limits.max_resumes = 3;
  Seen first;
  auto stream = streams.open("alice", limits, first.respond(), first.send());
  OnHangUp hang_up = stream->hold([this] { abandoned = true; });
  stream->events()("", "{1}", "");
  const EventPosition from{parse_event_id(first.events[1].first)->stream, 1};
  std::vector<Seen> seen(4);
  for (int time = 0; time < 3; ++time) {
    hang_up();
    const auto taken = streams.resume("alice", from, seen[time].respond(), seen[time].send());
    ASSERT_TRUE(taken) << time;
    hang_up = *taken;
  }
  hang_up();
  EXPECT_FALSE(streams.resume("alice", from, seen[3].respond(), seen[3].send()));
  stream.reset();
  io.run();  // until the window ends: nothing else is waiting
  EXPECT_TRUE(abandoned);
  EXPECT_EQ(streams.size(), 0u);
}

TEST_F(ResumableStreamsTest, APlainReplyEndsTheStreamAndAnUnprimedHangUpCancelsAtOnce) {
  Seen plain;
  auto answered = streams.open("alice", limits, plain.respond(), plain.send());
  answered->hold([] {});
  answered->responses()(reply("{}"));
  ASSERT_EQ(plain.responses.size(), 1u);
  EXPECT_EQ(plain.responses[0].event_id, "");
  EXPECT_TRUE(plain.events.empty());

  Seen quiet;
  auto stream = streams.open("alice", limits, quiet.respond(), quiet.send());
  stream->hold([this] { abandoned = true; })();
  EXPECT_TRUE(abandoned);
  EXPECT_EQ(streams.size(), 0u);
}

TEST_F(ResumableStreamsTest, ACallerGoneForTheWholeWindowHasItsCallCancelled) {
  limits.resume_window = std::chrono::seconds(1);
  Seen first;
  auto stream = streams.open("alice", limits, first.respond(), first.send());
  const OnHangUp hang_up = stream->hold([this] { abandoned = true; });
  stream->events()("", "{1}", "");
  hang_up();
  stream.reset();
  io.run();  // until the window ends: nothing else is waiting
  EXPECT_TRUE(abandoned);
  EXPECT_EQ(streams.size(), 0u);
}

TEST_F(ResumableStreamsTest, ANotificationStreamIsPrimedAtOnceAndTakenUpOnlyWhileItWaits) {
  limits.resume_window = std::chrono::seconds(1);
  Seen first;
  auto stream = streams.open("alice", limits, first.respond(), first.send());
  const OnHangUp hang_up = stream->hold([this] { abandoned = true; });
  streams.prime_for_notifications(stream);
  ASSERT_EQ(first.events.size(), 1u);
  EXPECT_TRUE(first.events[0].first.ends_with("-0")) << "the priming event";
  EXPECT_EQ(streams.size(), 1u);
  Seen second;
  EXPECT_FALSE(streams.take_up_notifications("alice", second.respond(), second.send()))
      << "its connection still holds it";

  hang_up();
  stream->events()("", "{1}", "");
  EXPECT_FALSE(streams.take_up_notifications("bob", second.respond(), second.send()));
  const auto taken = streams.take_up_notifications("alice", second.respond(), second.send());
  ASSERT_TRUE(taken);
  EXPECT_TRUE(second.opened);
  EXPECT_TRUE(second.events.empty()) << "taken up where it stands, nothing replayed";
  stream->events()("", "{2}", "");
  ASSERT_EQ(second.events.size(), 1u);
  EXPECT_EQ(second.events[0].second, "{2}");

  (*taken)();
  stream.reset();
  io.run();  // until the window ends: nothing else is waiting
  EXPECT_TRUE(abandoned);
  EXPECT_EQ(streams.size(), 0u);
  Seen third;
  EXPECT_FALSE(streams.take_up_notifications("alice", third.respond(), third.send()));
}

}  // namespace
}  // namespace sb::supervisor
