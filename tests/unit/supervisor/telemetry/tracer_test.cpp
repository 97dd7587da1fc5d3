// Request spans (supervisor/telemetry/tracer.hpp), as a collector on loopback receives
// them: the child of the caller's span, how each kind of answer ends one (a server's
// error, the caller's own fault, a tool's failure, an abandoned request), texts cut to
// their bound, a forwarded request's hop and round trip as its children (the worker's
// times kept within the hop, the reply's first byte and the messages to the caller marked
// on the round trip, a round trip ended without its answer an error), and an unsampled
// span never sent.
#include "supervisor/telemetry/tracer.hpp"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "base/unix_time.hpp"
#include "harness/fixed_http_origin.hpp"

namespace sb::supervisor {
namespace {

using namespace std::chrono_literals;
using json = nlohmann::json;

class TracerTest : public testing::Test {
 protected:
  // The spans of the one batch the collector got, by name.
  json exported(std::size_t spans) {
    const auto deadline = std::chrono::steady_clock::now() + 5s;
    while (collector_.answered() == 0 && std::chrono::steady_clock::now() < deadline) {
      io_.restart();
      io_.run_for(10ms);
    }
    const std::string request = collector_.last_request();
    if (request.empty()) return json();
    const json body = json::parse(request.substr(request.find("\r\n\r\n") + 4));
    json by_name = json::object();
    for (const auto& span : body["resourceSpans"][0]["scopeSpans"][0]["spans"]) {
      json attributes = json::object();
      for (const auto& attribute : span["attributes"])
        attributes[attribute["key"].get<std::string>()] = attribute["value"];
      // A round trip (CLIENT) has its request's name: it is kept as "client <name>".
      const std::string prefix = span["kind"] == 3 ? "client " : "";
      by_name[prefix + span["name"].get<std::string>()] = {{"span", span},
                                                           {"attributes", attributes}};
    }
    EXPECT_EQ(by_name.size(), spans);
    return by_name;
  }

  Tracer tracer(double ratio = 1.0) {
    config::Telemetry telemetry{
        .endpoint = collector_.url(""), .sample_ratio = ratio, .batch_delay = 20ms};
    auto exporter =
        std::make_shared<SpanExporter>(io_, client_, telemetry, TraceResource{}, ExportHeaders{},
                                       [](std::string_view, std::uint64_t) {});
    exporter->start();
    return Tracer(telemetry, std::move(exporter));
  }

  boost::asio::io_context io_;
  OutboundClient client_{io_, nullptr};
  harness::FixedHttpOrigin collector_{"{}"};
};

TEST_F(TracerTest, EachAnswerEndsItsSpanAsTheConventionsHaveIt) {
  auto made = tracer();
  const auto caller =
      read_trace_context("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "vendor=x");
  auto ok = made.start(caller, "ok");
  EXPECT_EQ(ok->traceparent().substr(0, 36), "00-4bf92f3577b34da6a3ce929d0e0e4736-");
  EXPECT_EQ(ok->traceparent().substr(52), "-01");
  EXPECT_EQ(ok->tracestate(), "vendor=x");
  ok->end(200, std::nullopt, false);
  made.start(std::nullopt, "timeout")->end(200, -32003, false);
  made.start(std::nullopt, "invalid params")->end(200, -32602, false);
  made.start(std::nullopt, "tool error")->end(200, std::nullopt, true);
  made.start(std::nullopt, "abandoned");  // dropped unanswered
  auto long_id = made.start(std::nullopt, std::string(1000, 'n'));
  long_id->set("jsonrpc.request.id", std::string(1 << 20, 'i'));
  long_id->end(202, std::nullopt, false);

  const json spans = exported(6);
  const json& first = spans["ok"]["span"];
  EXPECT_EQ(first["traceId"], "4bf92f3577b34da6a3ce929d0e0e4736");
  EXPECT_EQ(first["parentSpanId"], "00f067aa0ba902b7");
  EXPECT_EQ(first["traceState"], "vendor=x");
  EXPECT_FALSE(first.contains("status"));
  EXPECT_EQ(spans["ok"]["attributes"]["http.response.status_code"]["intValue"], "200");
  EXPECT_EQ(spans["timeout"]["span"]["status"]["code"], 2);
  EXPECT_EQ(spans["timeout"]["attributes"]["error.type"]["stringValue"], "-32003");
  EXPECT_EQ(spans["timeout"]["attributes"]["rpc.response.status_code"]["stringValue"], "-32003");
  EXPECT_FALSE(spans["invalid params"]["span"].contains("status"));  // the caller's fault
  EXPECT_EQ(spans["invalid params"]["attributes"]["error.type"]["stringValue"], "-32602");
  EXPECT_EQ(spans["tool error"]["span"]["status"]["code"], 2);
  EXPECT_EQ(spans["tool error"]["attributes"]["error.type"]["stringValue"], "tool_error");
  EXPECT_EQ(spans["abandoned"]["attributes"]["error.type"]["stringValue"], "abandoned");
  const std::string cut(kMaxSpanTextBytes, 'n');
  ASSERT_TRUE(spans.contains(cut));
  EXPECT_EQ(spans[cut]["attributes"]["jsonrpc.request.id"]["stringValue"],
            std::string(kMaxSpanTextBytes, 'i'));
}

TEST_F(TracerTest, AForwardedRequestsWayThroughTheWorkerAreItsChildren) {
  auto made = tracer();
  auto span = made.start(std::nullopt, "tools/call echo");
  span->set("switchboard.computer", std::string("macmini"));
  span->set("switchboard.caller", std::string("agent"));
  const std::string computers_parent = span->traceparent().substr(36, 16);
  span->message_to_caller();
  const auto now = unix_nanos_now();
  // The worker's word is kept within the hop: a reply "before" the request was sent, and a
  // send after the answer came back, are moved into it.
  span->end(200, std::nullopt, false,
            RoundTrip{.forwarded = now,
                      .sent = now + 10,
                      .first_byte = now + 500,
                      .replied = 5,
                      .returned = now + 100});
  const json spans = exported(3);
  const json& server = spans["tools/call echo"];
  ASSERT_TRUE(server.contains("span"));
  EXPECT_FALSE(server["span"].contains("events")) << "they are the round trip's";
  const json& hop = spans["switchboard worker"];
  EXPECT_EQ(hop["span"]["kind"], 1);
  EXPECT_EQ(hop["span"]["parentSpanId"], server["span"]["spanId"]);
  const json& round_trip = spans["client tools/call echo"];
  ASSERT_TRUE(round_trip.contains("span"));
  EXPECT_EQ(round_trip["span"]["spanId"], computers_parent);
  EXPECT_EQ(round_trip["span"]["parentSpanId"], hop["span"]["spanId"]);
  EXPECT_EQ(round_trip["attributes"]["switchboard.computer"]["stringValue"], "macmini");
  EXPECT_FALSE(round_trip["attributes"].contains("switchboard.caller"));
  const auto nanos = [](const json& span, const char* which) {
    return std::stoull(span["span"][which].get<std::string>());
  };
  EXPECT_EQ(nanos(round_trip, "startTimeUnixNano"), now + 10);
  EXPECT_EQ(nanos(round_trip, "endTimeUnixNano"), now + 10);
  EXPECT_LE(nanos(hop, "startTimeUnixNano"), nanos(round_trip, "startTimeUnixNano"));
  EXPECT_GE(nanos(hop, "endTimeUnixNano"), nanos(round_trip, "endTimeUnixNano"));
  const json& events = round_trip["span"]["events"];
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0]["name"], "message to the caller");
  EXPECT_EQ(events[1]["name"], "first byte of the reply");
  EXPECT_EQ(std::stoull(events[1]["timeUnixNano"].get<std::string>()), now + 10)
      << "kept within the round trip";
  EXPECT_FALSE(round_trip["span"].contains("status"));
}

TEST_F(TracerTest, ARoundTripEndedWithoutItsAnswerSaysHow) {
  auto made = tracer();
  auto timed_out = made.start(std::nullopt, "timed out");
  auto cancelled = made.start(std::nullopt, "cancelled");
  auto abandoned = made.start(std::nullopt, "abandoned");
  auto overloaded = made.start(std::nullopt, "overloaded");
  const auto now = unix_nanos_now();
  // Timed out in the worker, which says when it sent the request.
  timed_out->end(200, -32001, false,
                 RoundTrip{.forwarded = now,
                           .sent = now + 10,
                           .returned = now + 100,
                           .error_type = round_trip_error::kTimeout});
  // Cancelled by its caller: the worker's times never come back.
  cancelled->end(
      200, -32800, false,
      RoundTrip{
          .forwarded = now, .returned = now + 100, .error_type = round_trip_error::kCancelled});
  abandoned->end_abandoned(now);
  // Refused by the worker (a full cap): the computer never had it.
  overloaded->end(200, -32000, false, RoundTrip{.forwarded = now, .returned = now + 100});
  // Four requests, their hops (one name) and three round trips.
  const json spans = exported(8);
  for (const char* name : {"timed out", "cancelled", "abandoned"}) {
    const json& round_trip = spans[std::string("client ") + name];
    ASSERT_TRUE(round_trip.contains("span")) << name;
    EXPECT_EQ(round_trip["span"]["status"]["code"], 2) << name;
    EXPECT_EQ(round_trip["span"]["traceId"], spans[name]["span"]["traceId"]) << name;
  }
  EXPECT_EQ(spans["client timed out"]["attributes"]["error.type"]["stringValue"], "timeout");
  EXPECT_EQ(spans["client timed out"]["span"]["startTimeUnixNano"], std::to_string(now + 10));
  EXPECT_EQ(spans["client cancelled"]["attributes"]["error.type"]["stringValue"], "cancelled");
  EXPECT_EQ(spans["client cancelled"]["span"]["startTimeUnixNano"], std::to_string(now))
      << "from the hop's start, the worker's time of sending unknown";
  EXPECT_EQ(spans["client abandoned"]["attributes"]["error.type"]["stringValue"], "abandoned");
  EXPECT_FALSE(spans.contains("client overloaded"));
}

TEST_F(TracerTest, WhatTheSwitchboardDidItselfIsTheChildOfARequestItAnswered) {
  auto made = tracer();
  made.start(std::nullopt, "tools/call secret")->end(200, std::nullopt, true, {}, "policy");
  const json spans = exported(2);
  const json& step = spans["switchboard policy"];
  ASSERT_TRUE(step.contains("span"));
  EXPECT_EQ(step["span"]["kind"], 1);
  EXPECT_EQ(step["span"]["parentSpanId"], spans["tools/call secret"]["span"]["spanId"]);
  EXPECT_EQ(step["span"]["startTimeUnixNano"],
            spans["tools/call secret"]["span"]["startTimeUnixNano"]);
}

TEST_F(TracerTest, AnUnsampledSpanStillParentsTheComputerButIsNeverSent) {
  auto made = tracer(0.0);
  auto span = made.start(std::nullopt, "unsampled");
  EXPECT_EQ(span->traceparent().size(), 55u);
  EXPECT_EQ(span->traceparent().substr(52), "-00");
  span->end(200, std::nullopt, false);
  made.start(std::nullopt, "also unsampled")->end(200, std::nullopt, false);
  io_.restart();
  io_.run_for(100ms);  // five batch delays: a batch would have gone
  EXPECT_EQ(collector_.answered(), 0);
}

}  // namespace
}  // namespace sb::supervisor
