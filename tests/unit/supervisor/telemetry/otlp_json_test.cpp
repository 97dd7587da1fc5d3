// Spans as OTLP/HTTP JSON (supervisor/telemetry/otlp_json.hpp): ids in lower-case hex,
// times and integers as decimal strings, kinds and status as numbers, the resource and the
// scope once, and text that is not UTF-8 replaced rather than thrown on.
#include "supervisor/telemetry/otlp_json.hpp"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace sb::supervisor {
namespace {

using json = nlohmann::json;

Span sample_span() {
  Span span{.trace_id = {0x4b, 0xf9, 0x2f, 0x35, 0x77, 0xb3, 0x4d, 0xa6, 0xa3, 0xce, 0x92, 0x9d,
                         0x0e, 0x0e, 0x47, 0x36},
            .span_id = {0x00, 0xf0, 0x67, 0xaa, 0x0b, 0xa9, 0x02, 0xb7},
            .parent_id = SpanId{1, 2, 3, 4, 5, 6, 7, 8},
            .tracestate = "vendor=x",
            .name = "tools/call echo",
            .start_unix_nanos = 1'800'000'000'000'000'001ULL,
            .end_unix_nanos = 1'800'000'000'250'000'000ULL,
            .attributes = {{"mcp.method.name", std::string("tools/call")},
                           {"http.response.status_code", std::int64_t{200}},
                           {"switchboard.flag", true}},
            .events = {{"first byte", 1'800'000'000'100'000'000ULL}}};
  return span;
}

TEST(OtlpJson, ASpanIsWrittenAsTheProtocolsJsonEncoding) {
  const json request =
      json::parse(otlp_request(OtlpSignal::kTraces, {otlp_json(sample_span())},
                               {.service_version = "2.1.0", .service_instance = "box:8790"}));
  const json& resource_spans = request.at("resourceSpans").at(0);
  EXPECT_EQ(resource_spans.at("resource").at("attributes"),
            json::parse(R"([{"key":"service.name","value":{"stringValue":"switchboard"}},
                            {"key":"service.version","value":{"stringValue":"2.1.0"}},
                            {"key":"service.instance.id","value":{"stringValue":"box:8790"}}])"));
  const json& scope = resource_spans.at("scopeSpans").at(0);
  EXPECT_EQ(scope.at("scope").at("name"), "switchboard");
  const json& span = scope.at("spans").at(0);
  EXPECT_EQ(span.at("traceId"), "4bf92f3577b34da6a3ce929d0e0e4736");
  EXPECT_EQ(span.at("spanId"), "00f067aa0ba902b7");
  EXPECT_EQ(span.at("parentSpanId"), "0102030405060708");
  EXPECT_EQ(span.at("traceState"), "vendor=x");
  EXPECT_EQ(span.at("kind"), 2);
  EXPECT_EQ(span.at("startTimeUnixNano"), "1800000000000000001");
  EXPECT_EQ(span.at("endTimeUnixNano"), "1800000000250000000");
  EXPECT_EQ(span.at("attributes"),
            json::parse(R"([{"key":"mcp.method.name","value":{"stringValue":"tools/call"}},
                            {"key":"http.response.status_code","value":{"intValue":"200"}},
                            {"key":"switchboard.flag","value":{"boolValue":true}}])"));
  EXPECT_EQ(span.at("events"),
            json::parse(R"([{"name":"first byte","timeUnixNano":"1800000000100000000"}])"));
  EXPECT_FALSE(span.contains("status"));
}

TEST(OtlpJson, ARootSpanHasNoParentAndAnErrorHasItsStatus) {
  Span span = sample_span();
  span.parent_id.reset();
  span.tracestate.clear();
  span.error = true;
  span.status_message = "JSON-RPC error -32800";
  span.name = std::string("tools/call \xff\xfe", 13);  // not UTF-8: a caller's tool name
  const json request = json::parse(otlp_request(OtlpSignal::kTraces, {otlp_json(span)}, {}));
  const json& written = request["resourceSpans"][0]["scopeSpans"][0]["spans"][0];
  EXPECT_FALSE(written.contains("parentSpanId"));
  EXPECT_FALSE(written.contains("traceState"));
  EXPECT_EQ(written.at("status"), json::parse(R"({"code":2,"message":"JSON-RPC error -32800"})"));
  EXPECT_EQ(written.at("name"), "tools/call \xef\xbf\xbd\xef\xbf\xbd");
}

TEST(OtlpJson, AnAuditLineIsALogRecordWithItsSpan) {
  const std::vector<LogRecord> records{
      {.time_unix_nanos = 1'800'000'000'000'000'001ULL,
       .event = "call",
       .body = R"({"event":"call","tool":"echo"})",
       .trace_id = "4bf92f3577b34da6a3ce929d0e0e4736",
       .span_id = "00f067aa0ba902b7"},
      {.time_unix_nanos = 2, .event = "config_reloaded", .body = R"({"event":"config_reloaded"})"}};
  const json request =
      json::parse(otlp_request(OtlpSignal::kLogs, {otlp_json(records[0]), otlp_json(records[1])},
                               {.service_version = "2.1.0"}));
  const json& scope = request.at("resourceLogs").at(0).at("scopeLogs").at(0);
  EXPECT_EQ(request["resourceLogs"][0]["resource"]["attributes"][0]["value"]["stringValue"],
            "switchboard");
  EXPECT_EQ(scope.at("scope").at("name"), "switchboard");
  const json& call = scope.at("logRecords").at(0);
  EXPECT_EQ(call.at("timeUnixNano"), "1800000000000000001");
  EXPECT_EQ(call.at("observedTimeUnixNano"), "1800000000000000001");
  EXPECT_EQ(call.at("severityNumber"), 9);
  EXPECT_EQ(call.at("severityText"), "INFO");
  EXPECT_EQ(call.at("body"),
            json::parse(R"({"stringValue":"{\"event\":\"call\",\"tool\":\"echo\"}"})"));
  EXPECT_EQ(call.at("attributes"),
            json::parse(R"([{"key":"event.name","value":{"stringValue":"call"}}])"));
  EXPECT_EQ(call.at("traceId"), "4bf92f3577b34da6a3ce929d0e0e4736");
  EXPECT_EQ(call.at("spanId"), "00f067aa0ba902b7");
  const json& reload = scope.at("logRecords").at(1);
  EXPECT_FALSE(reload.contains("traceId"));
  EXPECT_FALSE(reload.contains("spanId"));
}

}  // namespace
}  // namespace sb::supervisor
