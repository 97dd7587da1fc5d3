// Spans and log records sent to a collector on loopback
// (supervisor/telemetry/otlp_exporter.hpp, export_headers.hpp): a batch with its headers,
// each kind to its path, the queue's bound, a refusal dropped and counted; and the headers
// file read, or refused with its line and never a value.
#include "supervisor/telemetry/otlp_exporter.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "harness/fixed_http_origin.hpp"
#include "harness/process.hpp"
#include "supervisor/telemetry/export_headers.hpp"

namespace sb::supervisor {
namespace {

using namespace std::chrono_literals;

struct Rig {
  boost::asio::io_context io;
  OutboundClient client{io, nullptr};
  std::map<std::string, std::uint64_t, std::less<>> counted;

  std::shared_ptr<SpanExporter> exporter(const harness::FixedHttpOrigin& collector,
                                         int max_queue_spans = 2048, ExportHeaders headers = {}) {
    config::Telemetry telemetry{
        .endpoint = collector.url(""), .batch_delay = 20ms, .max_queue_spans = max_queue_spans};
    auto made = std::make_shared<SpanExporter>(
        io, client, telemetry, TraceResource{"2.1.0", "box:1"}, std::move(headers),
        [this](std::string_view outcome, std::uint64_t spans) {
          counted[std::string(outcome)] += spans;
        });
    made->start();
    return made;
  }

  template <typename Condition>
  bool run_until(Condition condition) {
    const auto deadline = std::chrono::steady_clock::now() + 5s;
    while (!condition() && std::chrono::steady_clock::now() < deadline) {
      io.restart();
      io.run_for(10ms);
    }
    return condition();
  }
};

Span named(std::string name) {
  return Span{.trace_id = {1}, .span_id = {2}, .name = std::move(name)};
}

TEST(SpanExporter, SendsABatchWithItsHeadersToTheTracesPath) {
  Rig rig;
  const harness::FixedHttpOrigin collector("{}");
  const auto exporter = rig.exporter(collector, 2048, {{"api-key", "s3cret"}});
  exporter->add(named("tools/call echo"));
  exporter->add(named("tools/list"));
  ASSERT_TRUE(rig.run_until([&] { return rig.counted["exported"] == 2; }));
  EXPECT_EQ(collector.answered(), 1);  // one batch
  const std::string request = collector.last_request();
  EXPECT_EQ(request.rfind("POST /v1/traces HTTP/1.1\r\n", 0), 0u) << request;
  EXPECT_NE(request.find("api-key: s3cret\r\n"), std::string::npos);
  EXPECT_NE(request.find("Content-Type: application/json\r\n"), std::string::npos);
  const auto body = nlohmann::json::parse(request.substr(request.find("\r\n\r\n") + 4));
  EXPECT_EQ(body["resourceSpans"][0]["scopeSpans"][0]["spans"].size(), 2u);
  exporter->stop();
}

TEST(LogExporter, SendsLogRecordsToTheLogsPath) {
  Rig rig;
  const harness::FixedHttpOrigin collector("{}");
  config::Telemetry telemetry{.endpoint = collector.url(""), .batch_delay = 20ms};
  const auto exporter =
      std::make_shared<LogExporter>(rig.io, rig.client, telemetry, TraceResource{}, ExportHeaders{},
                                    [&](std::string_view outcome, std::uint64_t records) {
                                      rig.counted[std::string(outcome)] += records;
                                    });
  exporter->start();
  exporter->add(LogRecord{.event = "call", .body = R"({"event":"call"})"});
  ASSERT_TRUE(rig.run_until([&] { return rig.counted["exported"] == 1; }));
  const std::string request = collector.last_request();
  EXPECT_EQ(request.rfind("POST /v1/logs HTTP/1.1\r\n", 0), 0u) << request;
  const auto body = nlohmann::json::parse(request.substr(request.find("\r\n\r\n") + 4));
  EXPECT_EQ(body["resourceLogs"][0]["scopeLogs"][0]["logRecords"].size(), 1u);
  exporter->stop();
}

TEST(SpanExporter, APastTheQueuesBoundIsDroppedAndCounted) {
  Rig rig;
  const harness::FixedHttpOrigin collector("{}");
  const auto exporter = rig.exporter(collector, 3);
  for (int i = 0; i < 5; ++i) exporter->add(named("ping"));
  EXPECT_EQ(rig.counted["dropped"], 2u);
  ASSERT_TRUE(rig.run_until([&] { return rig.counted["exported"] == 3; }));
  exporter->stop();
}

TEST(SpanExporter, ABatchTheCollectorRefusesIsDroppedAndCounted) {
  Rig rig;
  const harness::FixedHttpOrigin collector(R"({"error":"no"})", 400);
  const auto exporter = rig.exporter(collector);
  exporter->add(named("ping"));
  ASSERT_TRUE(rig.run_until([&] { return rig.counted["dropped"] == 1; }));
  EXPECT_EQ(collector.answered(), 1);  // a 400 is not tried again
  EXPECT_EQ(rig.counted["exported"], 0u);
  exporter->stop();
}

TEST(SpanExporter, ARefusedBatchWaitsAsTheCollectorAsksWithinABound) {
  using std::chrono::seconds;
  EXPECT_EQ(export_retry_delay(1, std::nullopt), seconds(1));
  EXPECT_EQ(export_retry_delay(2, std::nullopt), seconds(2));
  EXPECT_EQ(export_retry_delay(3, std::nullopt), seconds(4));
  EXPECT_EQ(export_retry_delay(1, seconds(0)), seconds(0));
  EXPECT_EQ(export_retry_delay(2, seconds(7)), seconds(7));
  EXPECT_EQ(export_retry_delay(1, seconds(86400)), kMaxRetryAfter);
}

TEST(ExportHeaders, AFileOfNameValueLinesIsReadAndAnythingElseRefused) {
  const harness::TempDir dir("sb-export-headers");
  auto write = [&](const std::string& text) {
    const auto path = dir.path() / "headers";
    std::ofstream(path) << text;
    return path;
  };
  const auto read = read_export_headers(write("# a comment\n\nx-api-key: s3cret \nDD-Tag:a:b\n"));
  ASSERT_TRUE(std::holds_alternative<ExportHeaders>(read)) << std::get<std::string>(read);
  EXPECT_EQ(std::get<ExportHeaders>(read),
            (ExportHeaders{{"x-api-key", "s3cret"}, {"DD-Tag", "a:b"}}));
  const auto refused = [&](const std::string& text) {
    const auto result = read_export_headers(write(text));
    return std::holds_alternative<std::string>(result) ? std::get<std::string>(result) : "read";
  };
  EXPECT_NE(refused("no colon s3cret\n").find("line 1: expected `Name: value`"), std::string::npos);
  EXPECT_NE(refused("ok: 1\nbad name: s3cret\n").find("line 2: not a header name"),
            std::string::npos);
  EXPECT_EQ(refused("bad name: s3cret\n").find("s3cret"), std::string::npos);
  EXPECT_NE(refused(std::string("x: a\x01b\n")).find("control characters"), std::string::npos);
  EXPECT_NE(std::get<std::string>(read_export_headers(dir.path() / "missing")).find("missing"),
            std::string::npos);
}

}  // namespace
}  // namespace sb::supervisor
