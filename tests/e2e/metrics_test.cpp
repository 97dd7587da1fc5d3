// End to end: the metrics listener (docs/metrics.md). Every scrape is read with a strict
// exposition-format reader (harness/exposition.hpp), and each family is checked to
// move after the real event it counts: a call of each outcome, a worker stalled and
// killed, attaches and detaches, auth failures, reloads, pod dials, progress, refused
// connections. Also the status page in headless Chromium, `switchboard workers --watch`,
// and the Grafana dashboard against the families a real scrape declares.
#include <gtest/gtest.h>
#include <signal.h>

#include <fstream>
#include <regex>
#include <set>

#include "harness/exposition.hpp"
#include "harness/raw_socket.hpp"
#include "tests/e2e/e2e_helpers.hpp"

namespace sbtest {
namespace {

// Every family /metrics declares, whatever has happened (docs/metrics.md).
const std::vector<std::string> kFamilies{
    "switchboard_calls_total",
    "switchboard_call_duration_seconds",
    "switchboard_reply_bytes",
    "switchboard_caller_calls_in_flight",
    "switchboard_computer_calls_in_flight",
    "switchboard_computer_max_in_flight",
    "switchboard_computer_attached",
    "switchboard_computer_ready",
    "switchboard_computer_attached_seconds",
    "switchboard_computer_attaches_total",
    "switchboard_computer_detaches_total",
    "switchboard_worker_restarts_total",
    "switchboard_worker_stalls_total",
    "switchboard_worker_stalled",
    "switchboard_worker_resident_bytes",
    "switchboard_auth_failures_total",
    "switchboard_reloads_total",
    "switchboard_pod_dials_total",
    "switchboard_progress_routed_total",
    "switchboard_notifications_dropped_total",
    "switchboard_http_connections_open",
    "switchboard_http_connections_refused_total",
    "switchboard_http_connections_cut_total",
    "switchboard_trace_spans_total",
    "switchboard_audit_log_records_total",
    "switchboard_switches_total",
    "switchboard_sessions_resumed_total",
    "switchboard_reply_buffer_bytes",
    "switchboard_reply_buffer_capacity_bytes",
};

class Metrics : public AlphaTest {
 protected:
  int metrics_port_ = free_port();

  ConfigBuilder metrics_config(std::optional<int> alpha_max = {}) const {
    return config(alpha_max).set("metrics_listen",
                                 toml_string("127.0.0.1:" + std::to_string(metrics_port_)));
  }

  // One scrape, held to the exposition format; a violation fails the test.
  Exposition scrape() const {
    const auto response = http_get(metrics_port_, "/metrics");
    EXPECT_EQ(response.status, 200);
    EXPECT_EQ(response.header("Content-Type"), "text/plain; version=0.0.4; charset=utf-8");
    try {
      return parse_exposition(response.body);
    } catch (const std::exception& error) {
      ADD_FAILURE() << "/metrics is not strict exposition format: " << error.what() << "\n"
                    << response.body;
      return {};
    }
  }

  double value(const std::string& name, const Labels& labels = {}) const {
    return sample_value(scrape(), name, labels).value_or(-1);
  }

  // Waits (bounded) until the sample reads `expected`; says what it read last otherwise.
  ::testing::AssertionResult reaches(const std::string& name, const Labels& labels,
                                     double expected) const {
    double last = -1;
    if (eventually([&] { return (last = value(name, labels)) == expected; }))
      return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure() << name << " read " << last << ", expected " << expected;
  }

  double calls(const std::string& client, const std::string& outcome) const {
    return value("switchboard_calls_total",
                 {{"computer", "alpha"}, {"client", client}, {"outcome", outcome}});
  }
};

TEST_F(Metrics, EveryFamilyIsDeclaredInStrictExpositionFormatBeforeAnyEvent) {
  SwitchboardProcess sb(metrics_config());
  const Exposition exposition = scrape();
  for (const auto& name : kFamilies) {
    const Family* family = find_family(exposition, name);
    ASSERT_NE(family, nullptr) << name << " is not declared";
    EXPECT_FALSE(family->help.empty()) << name;
  }
  EXPECT_EQ(exposition.families.size(), kFamilies.size()) << "a family the docs do not list";
  EXPECT_EQ(sample_value(exposition, "switchboard_computer_ready", {{"computer", "alpha"}}), 0);
  EXPECT_EQ(sample_value(exposition, "switchboard_computer_attached", {{"computer", "alpha"}}), 0);
  EXPECT_GT(*sample_value(exposition, "switchboard_worker_resident_bytes", {{"computer", "alpha"}}),
            0);
  EXPECT_EQ(sample_value(exposition, "switchboard_computer_max_in_flight", {{"computer", "alpha"}}),
            8);
  EXPECT_EQ(sample_value(exposition, "switchboard_reply_buffer_capacity_bytes"),
            512.0 * 1024 * 1024);
  for (const char* outcome : {"exported", "dropped"}) {
    EXPECT_EQ(sample_value(exposition, "switchboard_trace_spans_total", {{"outcome", outcome}}), 0)
        << outcome;
  }

  // The status page, and nothing else, beside it.
  const auto page = http_get(metrics_port_, "/");
  EXPECT_EQ(page.status, 200);
  EXPECT_EQ(page.header("Content-Type"), "text/html; charset=utf-8");
  EXPECT_NE(page.body.find("id=\"computers\""), std::string::npos);
  EXPECT_NE(page.header("Content-Security-Policy").value_or("").find("default-src 'none'"),
            std::string::npos);
  EXPECT_EQ(http_get(metrics_port_, "/mcp").status, 404);
  EXPECT_EQ(http(metrics_port_, HttpRequest{.method = "POST", .target = "/metrics"}).status, 405);
  // No token is asked for, and the relay's own listener does not serve it.
  EXPECT_EQ(http_get(sb.port(), "/metrics").status, 404);
}

// A web page whose host name points at 127.0.0.1 (DNS rebinding) must not have a browser
// read the metrics for it: only requests addressed to an IP address or localhost.
TEST_F(Metrics, OnlyRequestsAddressedToAnIpAddressOrLocalhostAreAnswered) {
  SwitchboardProcess sb(metrics_config());
  const auto status_for_host = [&](const std::string& host) {
    RawSocket socket(metrics_port_);
    socket.send_all("GET /metrics HTTP/1.1\r\nHost: " + host + "\r\nConnection: close\r\n\r\n");
    const std::string answer = socket.read_to_end();
    return answer.substr(0, answer.find("\r\n"));
  };
  EXPECT_EQ(status_for_host("evil.example:" + std::to_string(metrics_port_)),
            "HTTP/1.1 403 Forbidden");
  EXPECT_EQ(status_for_host("127.0.0.1.nip.io"), "HTTP/1.1 403 Forbidden");
  EXPECT_EQ(status_for_host("127.0.0.1:" + std::to_string(metrics_port_)), "HTTP/1.1 200 OK");
  EXPECT_EQ(status_for_host("localhost:" + std::to_string(metrics_port_)), "HTTP/1.1 200 OK");
  EXPECT_EQ(status_for_host("[::1]:" + std::to_string(metrics_port_)), "HTTP/1.1 200 OK");
}

TEST_F(Metrics, EachCallOutcomeIsCountedByComputerCallerAndOutcome) {
  SwitchboardProcess sb(metrics_config(/*alpha_max=*/1));
  // Before alpha attaches: not_attached.
  call_tool(sb.port(), "/mcp/alpha", owner_.secret, "echo", json{{"n", 0}});
  auto fake = attach_alpha(sb);
  ASSERT_TRUE(fake);

  call_tool(sb.port(), "/mcp/alpha", alice_.secret, "echo", json{{"n", 1}});
  call_tool(sb.port(), "/mcp/alpha", alice_.secret, "echo", json{{"mode", "tool_error"}});
  call_tool(sb.port(), "/mcp/alpha", alice_.secret, "echo",
            json{{"mode", "error"}, {"code", -32000}});
  call_tool(sb.port(), "/mcp/alpha", alice_.secret, "secret_tool", json::object());  // denied
  EXPECT_EQ(error_code(call_tool(sb.port(), "/mcp/alpha", alice_.secret, "slow", hold(1))),
            kTimeout);

  {  // alpha takes one call at a time: alice's second is overloaded.
    CallInFlight held(sb.port(), "/mcp/alpha", alice_.secret, "echo", hold(2), "held");
    ASSERT_TRUE(fake->wait_for_calls(5));
    EXPECT_TRUE(reaches("switchboard_caller_calls_in_flight",
                        {{"computer", "alpha"}, {"client", "alice"}}, 1));
    EXPECT_EQ(error_code(call_tool(sb.port(), "/mcp/alpha", alice_.secret, "echo", hold(3))),
              kOverloaded);
    // alice cancels the held call.
    EXPECT_EQ(post_mcp(sb.port(), "/mcp/alpha", alice_.secret,
                       json{{"jsonrpc", "2.0"},
                            {"method", "notifications/cancelled"},
                            {"params", {{"requestId", "held"}}}})
                  .status,
              202);
    held.wait();
  }
  {  // alice hangs up mid-call: abandoned.
    HttpConnection connection(sb.port());
    connection.send(mcp_request("/mcp/alpha", alice_.secret, tool_call(7, "echo", hold(4))));
    ASSERT_TRUE(fake->wait_for_calls(6));
    connection.close();
    EXPECT_TRUE(reaches("switchboard_calls_total",
                        {{"computer", "alpha"}, {"client", "alice"}, {"outcome", "abandoned"}}, 1));
  }

  for (const char* outcome :
       {"ok", "tool_error", "rpc_error", "denied", "timeout", "overloaded", "cancelled"}) {
    EXPECT_EQ(calls("alice", outcome), 1) << outcome;
  }
  EXPECT_EQ(calls("owner", "not_attached"), 1);

  // A call in flight when its worker dies: disconnected.
  CallInFlight lost(sb.port(), "/mcp/alpha", owner_.secret, "echo", hold(5), "lost");
  ASSERT_TRUE(fake->wait_for_calls(7));
  ASSERT_EQ(::kill(sb.worker("alpha")["pid"].get<pid_t>(), SIGKILL), 0);
  EXPECT_EQ(error_code(lost.wait()), kDisconnected);
  EXPECT_EQ(calls("owner", "disconnected"), 1);

  const Exposition after = scrape();
  // Nothing is left in flight, and the duration histogram holds every call: alice's under
  // the tools her grant names, a denied name and owner's ("*" grant) under "other".
  EXPECT_EQ(sum_of(after, "switchboard_caller_calls_in_flight"), 0);
  EXPECT_EQ(sum_of(after, "switchboard_calls_total"), 10);
  EXPECT_EQ(sum_of(after, "switchboard_call_duration_seconds_count"), 10);
  EXPECT_EQ(sample_value(after, "switchboard_call_duration_seconds_count",
                         {{"computer", "alpha"}, {"tool", "echo"}}),
            6);
  EXPECT_EQ(sample_value(after, "switchboard_call_duration_seconds_count",
                         {{"computer", "alpha"}, {"tool", "slow"}}),
            1);
  EXPECT_EQ(sample_value(after, "switchboard_call_duration_seconds_count",
                         {{"computer", "alpha"}, {"tool", "other"}}),
            3);
  // The timeout took at least its second.
  EXPECT_LE(*sample_value(after, "switchboard_call_duration_seconds_bucket",
                          {{"computer", "alpha"}, {"tool", "slow"}, {"le", "0.5"}}),
            0);
  // Three replies came from the computer (ok, tool_error, rpc_error).
  EXPECT_EQ(sample_value(after, "switchboard_reply_bytes_count", {{"computer", "alpha"}}), 3);
}

TEST_F(Metrics, AttachesStallsRestartsAndDetachesAreCountedPerComputer) {
  SwitchboardProcess sb(metrics_config());
  auto fake = attach_alpha(sb);
  ASSERT_TRUE(fake);
  EXPECT_TRUE(reaches("switchboard_computer_attaches_total", {{"computer", "alpha"}}, 1));
  EXPECT_EQ(value("switchboard_computer_ready", {{"computer", "alpha"}}), 1);
  EXPECT_EQ(value("switchboard_computer_attached", {{"computer", "alpha"}}), 1);
  EXPECT_GE(value("switchboard_computer_attached_seconds", {{"computer", "alpha"}}), 0);

  // A stopped worker: the scrape reads its status board and /proc, never the worker, so it
  // is answered while the worker is still stopped, and shows it stalled.
  const pid_t pid = sb.worker("alpha")["pid"].get<pid_t>();
  ASSERT_EQ(::kill(pid, SIGSTOP), 0);
  ASSERT_TRUE(eventually([&] { return process_state(pid) == 'T'; }));
  EXPECT_TRUE(reaches("switchboard_worker_stalled", {{"computer", "alpha"}}, 1));
  EXPECT_TRUE(reaches("switchboard_worker_stalls_total", {{"computer", "alpha"}}, 1));
  const auto started = Clock::now();
  const Exposition during = scrape();
  const auto took = elapsed_since(started);
  EXPECT_EQ(process_state(pid), 'T') << "the worker must still be stopped";
  RecordProperty("scrape_during_stall_ms", static_cast<int>(took.count()));
  EXPECT_EQ(sample_value(during, "switchboard_computer_ready", {{"computer", "alpha"}}), 0);
  EXPECT_EQ(sample_value(during, "switchboard_worker_stalls_total", {{"computer", "alpha"}}), 1);
  ASSERT_EQ(::kill(pid, SIGCONT), 0);
  EXPECT_TRUE(reaches("switchboard_worker_stalled", {{"computer", "alpha"}}, 0));

  // Killed: its session ends as a 1006 detach and the worker is restarted.
  ASSERT_EQ(::kill(pid, SIGKILL), 0);
  EXPECT_TRUE(reaches("switchboard_worker_restarts_total", {{"computer", "alpha"}}, 1));
  EXPECT_TRUE(
      reaches("switchboard_computer_detaches_total", {{"computer", "alpha"}, {"code", "1006"}}, 1));
  EXPECT_TRUE(reaches("switchboard_computer_attached", {{"computer", "alpha"}}, 0));

  // A fresh attach to the new worker, closed by the computer itself: 1000.
  ASSERT_TRUE(eventually([&] { return sb.worker("alpha")["state"] == "idle"; }));
  auto again = attach_alpha(sb);
  ASSERT_TRUE(again);
  EXPECT_TRUE(reaches("switchboard_computer_attaches_total", {{"computer", "alpha"}}, 2))
      << "a computer's counts outlive its worker";
  again->close(1000);
  EXPECT_TRUE(
      reaches("switchboard_computer_detaches_total", {{"computer", "alpha"}, {"code", "1000"}}, 1));
}

TEST_F(Metrics, AuthFailuresAndReloadsAreCountedByKindAndResult) {
  SwitchboardProcess sb(metrics_config());
  EXPECT_EQ(post_mcp(sb.port(), "/mcp/alpha", "not-a-token", tool_call(1, "echo")).status, 401);
  EXPECT_EQ(value("switchboard_auth_failures_total", {{"kind", "client"}}), 1);

  FakeComputer stranger(sb.port(), FakeComputerOptions{.secret = new_secret().secret});
  EXPECT_EQ(stranger.attach(), 401);
  EXPECT_EQ(value("switchboard_auth_failures_total", {{"kind", "computer"}}), 1);

  sb.reload(metrics_config());
  EXPECT_TRUE(reaches("switchboard_reloads_total", {{"result", "ok"}}, 1));
  std::ofstream(sb.config_path(), std::ios::trunc) << "this is = not [valid toml\n";
  sb.send_signal(SIGHUP);
  EXPECT_TRUE(reaches("switchboard_reloads_total", {{"result", "failed"}}, 1));
  EXPECT_EQ(value("switchboard_reloads_total", {{"result", "ok"}}), 1);
}

// Switches in place and the sessions they carried are counted across the processes
// (docs/architecture.md, "Switching"): each process goes on from its predecessor's count.
TEST_F(Metrics, SwitchesInPlaceAndTheSessionsTheyResumedAreCounted) {
  SwitchboardProcess sb(metrics_config());
  auto fake = attach_alpha(sb);
  ASSERT_TRUE(fake);
  EXPECT_EQ(value("switchboard_switches_total", {}), 0);
  for (std::size_t switches = 1; switches <= 2; ++switches) {
    sb.send_signal(SIGUSR2);
    ASSERT_TRUE(
        sb.audit().wait_for_count("service_restarted", switches, {}, std::chrono::seconds(20)))
        << sb.diagnostics();
    EXPECT_TRUE(reaches("switchboard_switches_total", {}, static_cast<double>(switches)));
    EXPECT_EQ(value("switchboard_sessions_resumed_total", {}), static_cast<double>(switches));
  }
  EXPECT_EQ(value("switchboard_computer_attached", {{"computer", "alpha"}}), 1);
}

TEST_F(Metrics, ProgressRoutedAndMessagesNoCallerCouldTakeAreCounted) {
  SwitchboardProcess sb(metrics_config());
  auto fake = attach_alpha(sb);
  ASSERT_TRUE(fake);
  const auto reply =
      post_mcp(sb.port(), "/mcp/alpha", alice_.secret,
               rpc(1, "tools/call",
                   json{{"name", "echo"},
                        {"arguments", {{"mode", "progress"}, {"every_ms", 1}, {"count", 3}}},
                        {"_meta", {{"progressToken", "p"}}}}));
  EXPECT_EQ(reply.status, 200);
  EXPECT_EQ(value("switchboard_progress_routed_total", {{"computer", "alpha"}}), 3);

  // Progress for a token no call carries goes nowhere.
  fake->send_text(R"({"jsonrpc":"2.0","method":"notifications/progress",)"
                  R"("params":{"progressToken":"nobody","progress":1}})");
  EXPECT_TRUE(reaches("switchboard_notifications_dropped_total", {{"computer", "alpha"}}, 1));

  // The worker counted it; the count outlives the worker.
  ASSERT_EQ(::kill(sb.worker("alpha")["pid"].get<pid_t>(), SIGKILL), 0);
  EXPECT_TRUE(reaches("switchboard_worker_restarts_total", {{"computer", "alpha"}}, 1));
  ASSERT_TRUE(eventually([&] { return sb.worker("alpha")["state"] == "idle"; }));
  EXPECT_EQ(value("switchboard_notifications_dropped_total", {{"computer", "alpha"}}), 1);
}

TEST_F(Metrics, ConnectionsOpenAndRefusedAtTheCapAreCounted) {
  constexpr int kCap = 8;  // the smallest max_connections allowed
  SwitchboardProcess sb(metrics_config().block("[limits]\nmax_connections = 8\n"));
  std::vector<std::unique_ptr<HttpConnection>> held;
  for (int i = 0; i < kCap; ++i) {
    held.push_back(std::make_unique<HttpConnection>(sb.port()));
    EXPECT_EQ(held.back()->request(HttpRequest{.target = "/healthz"}).status, 200);
  }
  EXPECT_EQ(value("switchboard_http_connections_open"), kCap);
  EXPECT_THROW(http_get(sb.port(), "/healthz"), std::exception);
  EXPECT_TRUE(reaches("switchboard_http_connections_refused_total", {}, 1));
}

TEST_F(Metrics, PodDialsAreCountedByAttachAndOutcome) {
  TempDir dir;
  std::ofstream(dir.path() / "grant") << "a-grant\n";
  const std::string nobody = "ws://127.0.0.1:" + std::to_string(free_port()) + "/attach";
  SwitchboardProcess sb(
      metrics_config().block("[[pty_attach]]\nname = \"kiro\"\nurl = " + toml_string(nobody) +
                             "\nsecret_file = " + toml_string((dir.path() / "grant").string()) +
                             "\ncomputer = \"alpha\"\ntools = [\"echo\"]\n"));
  EXPECT_TRUE(eventually([&] {
    return value("switchboard_pod_dials_total", {{"pod", "kiro"}, {"outcome", "failed"}}) >= 1;
  }));
}

// ---------------------------------------------------------------------------------------
// The status page, workers --watch, the dashboard

// Headless Chromium, when the machine has it (CI installs it and sets
// SWITCHBOARD_REQUIRE_CHROMIUM so that it cannot be skipped there).
std::optional<std::string> chromium() {
  for (const char* path : {"/usr/bin/chromium", "/usr/bin/chromium-browser"}) {
    if (fs::exists(path)) return path;
  }
  return std::nullopt;
}

// Calls alpha's echo from a thread until stopped, so that rates have something to show.
class Load {
 public:
  Load(int port, std::string token)
      : thread_([this, port, token] {
          // Calls stop being answered once a test stops the switchboard: that ends the load.
          try {
            while (!stop_) call_tool(port, "/mcp/alpha", token, "echo", json{{"n", 1}});
          } catch (const std::exception&) {
          }
        }) {}
  ~Load() {
    stop_ = true;
    thread_.join();
  }

 private:
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

TEST_F(Metrics, TheStatusPageShowsARowPerComputerAndCallerInHeadlessChromium) {
  const auto browser = chromium();
  if (!browser) {
    if (std::getenv("SWITCHBOARD_REQUIRE_CHROMIUM")) FAIL() << "chromium is required here";
    GTEST_SKIP() << "no chromium on this machine";
  }
  SwitchboardProcess sb(metrics_config());
  auto fake = attach_alpha(sb);
  ASSERT_TRUE(fake);
  // Under load, and with two of alice's calls held so that some figures are exact.
  Load load(sb.port(), owner_.secret);
  CallInFlight first(sb.port(), "/mcp/alpha", alice_.secret, "echo", hold(1), "h1");
  CallInFlight second(sb.port(), "/mcp/alpha", alice_.secret, "echo", hold(2), "h2");
  ASSERT_TRUE(eventually([&] {
    return value("switchboard_caller_calls_in_flight",
                 {{"computer", "alpha"}, {"client", "alice"}}) == 2 &&
           calls("owner", "ok") >= 5;
  }));

  // Virtual time runs the page's 2 s polls at once. Its rates are then counts over virtual
  // seconds, so only their form is checked here; the quantile and rate arithmetic is
  // checked where it is exact (tests/unit/supervisor/metrics/quantile_test.cpp, the same
  // interpolation).
  TempDir profile;
  const auto result =
      run_command({*browser, "--headless", "--no-sandbox", "--disable-gpu",
                   "--user-data-dir=" + profile.path().string(), "--virtual-time-budget=7000",
                   "--dump-dom", "http://127.0.0.1:" + std::to_string(metrics_port_) + "/"},
                  profile.path(), std::chrono::seconds(60));
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const std::string& dom = result.out;

  std::smatch polls;
  ASSERT_TRUE(std::regex_search(dom, polls, std::regex(R"re(data-polls="(\d+)")re"))) << dom;
  EXPECT_GE(std::stoi(polls[1]), 2) << "the page never polled twice";
  // The text of one cell: the row's element up to its </tr>, then the cell in it.
  const auto cell = [&](const std::string& row, const std::string& field) {
    const auto start = dom.find("<tr " + row);
    if (start == std::string::npos) return std::string("(no row)");
    const std::string element = dom.substr(start, dom.find("</tr>", start) - start);
    std::smatch found;
    const std::regex pattern("data-field=\"" + field + "\"[^>]*>([\\s\\S]*?)</td>");
    if (!std::regex_search(element, found, pattern)) return std::string("(no cell)");
    return std::regex_replace(found[1].str(), std::regex("<[^>]*>"), "");  // the text only
  };
  const std::string alpha = R"(data-computer="alpha")";
  EXPECT_EQ(cell(alpha, "state"), "ready") << dom;
  EXPECT_TRUE(std::regex_search(cell(alpha, "calls_per_sec"), std::regex(R"(^\d+\.\d)"))) << dom;
  EXPECT_TRUE(std::regex_search(cell(alpha, "in_flight"), std::regex(R"(^[2-8] / 8$)"))) << dom;
  EXPECT_EQ(cell(alpha, "restarts"), "0") << dom;
  EXPECT_TRUE(std::regex_search(cell(alpha, "memory"), std::regex(R"(^\d+\.\d$)"))) << dom;
  EXPECT_EQ(cell(R"(data-client="alice")", "in_flight"), "2") << dom;
  EXPECT_TRUE(
      std::regex_search(cell(R"(data-client="owner")", "calls_per_sec"), std::regex(R"(^\d+\.\d)")))
      << dom;
  for (const auto& arguments : {hold(1), hold(2)})
    fake->answer_echo(call_with_arguments(*fake, arguments));
  EXPECT_EQ(echoed(first.wait()), hold(1));
  EXPECT_EQ(echoed(second.wait()), hold(2));
}

TEST_F(Metrics, WorkersWatchRefreshesEverySecondWithCallsPerSecondUntilInterrupted) {
  SwitchboardProcess sb(metrics_config());
  auto fake = attach_alpha(sb);
  ASSERT_TRUE(fake);
  Load load(sb.port(), alice_.secret);
  TempDir out;
  const pid_t watch = start_process(
      {(bin_dir() / "switchboard").string(), "workers", "--watch", "-c", sb.config_path().string()},
      out.path() / "out", out.path() / "err");
  // The first table has no rate yet; a later one has a number for alpha.
  const std::regex rated(R"(alpha\s+\d+\s+ready\s+\S+\s+\S+\s+(\d+\.\d)\s+(\d+\.\d) ms)");
  std::smatch found;
  std::string text;
  EXPECT_TRUE(eventually([&] {
    text = read_file(out.path() / "out");
    return std::regex_search(text, found, rated) && std::stod(found[1]) > 0;
  })) << text;
  EXPECT_NE(text.find("CALLS/S"), std::string::npos);

  // A switchboard that stops answering is said, and the watch goes on.
  sb.stop();
  EXPECT_TRUE(eventually([&] {
    return read_file(out.path() / "out").find("no switchboard answers") != std::string::npos;
  }));
  EXPECT_TRUE(process_alive(watch));
  ASSERT_EQ(::kill(watch, SIGINT), 0);
  const auto status = reap_within(watch, std::chrono::seconds(5));
  ASSERT_TRUE(status);
  EXPECT_EQ(exit_code_of(*status), 0) << read_file(out.path() / "err");
  EXPECT_EQ(sb.run_cli({"workers", "--json", "--watch"}).exit_code, 2);
}

TEST_F(Metrics, TheGrafanaDashboardAsksOnlyForFamiliesTheSwitchboardServes) {
  SwitchboardProcess sb(metrics_config());
  std::set<std::string> served;
  for (const auto& family : scrape().families) served.insert(family.name);
  const std::string dashboard =
      read_file(harness::source_dir() / "packaging/grafana/switchboard.json");
  ASSERT_FALSE(json::parse(dashboard, nullptr, false).is_discarded());
  const std::regex name(R"(switchboard_[a-z_]+)");
  std::set<std::string> asked;
  for (auto it = std::sregex_iterator(dashboard.begin(), dashboard.end(), name);
       it != std::sregex_iterator(); ++it) {
    std::string family = it->str();
    for (const std::string suffix : {"_bucket", "_sum", "_count"}) {
      if (family.ends_with(suffix) && !served.contains(family))
        family.resize(family.size() - suffix.size());
    }
    asked.insert(family);
  }
  EXPECT_GE(asked.size(), 15u);
  for (const auto& family : asked) EXPECT_TRUE(served.contains(family)) << family;
}

}  // namespace
}  // namespace sbtest
