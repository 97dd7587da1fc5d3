// switchboard-bounds: the figures of docs/robustness.md, "Bounds, measured", from the real
// programs over loopback, each measurement on a switchboard of its own:
//
//   memory   64 callers call at once a computer that answers each with 16 MiB: the
//            worker's and the supervisor's resident memory before, at the peak, and at
//            rest after every reply was read;
//   junk     switchboard-connect in front of a server that writes 50 MiB of lines that
//            are not JSON-RPC: the lines of its log;
//   orphans  100 callers that never read a 4 MiB reply, cut at a 1 s write deadline: the
//            sockets the kernel still keeps with unsent bytes, and for how long;
//   audit    one caller flooding calls refused -32002 for 20 s: the audit log's growth,
//            its summary line included (written when the minute's window ends);
//   resumes  200 calls whose caller hangs up and takes the response up on resume, at a
//            computer with 4 places: every response given, the next call answered; then
//            1000 resumes of one kept 250 KB response that never read: the supervisor's
//            memory and the kernel's bytes unsent.
//
// `--program PATH` measures another build's switchboard (its worker beside it), and
// `--connect PATH` another build's switchboard-connect, to put figures before and after a
// change side by side. Prints Markdown; exits 1 when a measurement could not be made.
#include <sys/types.h>

#include <atomic>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "harness/config_builder.hpp"
#include "harness/descriptor_limit.hpp"
#include "harness/fake_computer.hpp"
#include "harness/http_client.hpp"
#include "harness/kernel_sockets.hpp"
#include "harness/process.hpp"
#include "harness/raw_socket.hpp"
#include "harness/switchboard_process.hpp"
#include "harness/wait.hpp"

namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;
using namespace harness;

constexpr const char* kUsage =
    "usage: switchboard-bounds [--program PATH] [--connect PATH]\n"
    "                          [--only memory,junk,orphans,audit,resumes] [--flood-secs N]\n";

struct Options {
  fs::path program = bin_dir() / "switchboard";
  fs::path connect = bin_dir() / "switchboard-connect";
  std::set<std::string> only;
  int flood_secs = 20;
  bool wants(const std::string& part) const { return only.empty() || only.count(part); }
};

void require(bool condition, const std::string& what) {
  if (!condition) throw std::runtime_error(what);
}

double mib(long kib) {
  return static_cast<double>(kib) / 1024.0;
}

std::string fixed(double value, int decimals = 1) {
  std::ostringstream out;
  out.setf(std::ios::fixed);
  out.precision(decimals);
  out << value;
  return out.str();
}

json text_result(const std::string& text) {
  return json{{"content", json::array({{{"type", "text"}, {"text", text}}})}};
}

// A fake computer answering every `echo` with `text`, attached and reported ready.
std::unique_ptr<FakeComputer> attach(const SwitchboardProcess& sb, const Secret& secret,
                                     const std::string& token, const std::string* text) {
  FakeComputerOptions options;
  options.secret = secret.secret;
  if (text) {
    options.on_call = [text](const json& params) {
      if (params.value("name", "") != "echo") return scripted_by_arguments(params);
      return CallAction::result(text_result(*text));
    };
  }
  auto fake = std::make_unique<FakeComputer>(sb.port(), std::move(options));
  require(fake->attach() == 101, "the computer's attach was refused: " + fake->refusal().body);
  require(eventually([&] { return http_get(sb.port(), "/readyz/alpha", token).status == 200; }),
          "the computer never reported ready");
  return fake;
}

ConfigBuilder one_computer(const Secret& computer, const Secret& client, int max_inflight) {
  return ConfigBuilder()
      .computer("alpha", computer, max_inflight)
      .client("owner", client, R"({ "*" = ["*"] })", "alpha", max_inflight);
}

std::string post_head(const std::string& token, std::size_t content_length) {
  return mcp_post_head("/mcp/alpha", token, content_length, "Connection: close\r\n");
}

// The smallest of the readings of a resident size over 6 s: what stays once the processes
// have given back what they give back when idle (every 2 s, after 2 s quiet), not what is
// on its way out.
long resting_kib(pid_t pid) {
  long least = status_kib(pid, "VmRSS").value_or(0);
  for (int i = 0; i < 30; ++i) {
    std::this_thread::sleep_for(200ms);
    least = std::min(least, status_kib(pid, "VmRSS").value_or(0));
  }
  return least;
}

void measure_memory(const Options& options) {
  constexpr int kCalls = 64;
  const std::string text(16 * 1024 * 1024 - 4096, 'x');
  const Secret computer = new_secret();
  const Secret client = new_secret();
  SwitchboardProcess sb(one_computer(computer, client, kCalls), options.program);
  const auto fake = attach(sb, computer, client.secret, &text);
  const pid_t worker = sb.worker("alpha")["pid"].get<pid_t>();
  const long worker_before = resting_kib(worker);
  const long supervisor_before = resting_kib(sb.pid());

  std::atomic<int> whole{0};
  std::vector<std::thread> callers;
  for (int i = 0; i < kCalls; ++i) {
    callers.emplace_back([&, i] {
      const std::string body = tool_call(i, "echo").dump();
      RawSocket socket(sb.port());
      if (!socket.send_all(post_head(client.secret, body.size()) + body)) return;
      if (socket.read_to_end(120s).size() > text.size()) ++whole;
    });
  }
  for (auto& caller : callers) caller.join();
  require(whole == kCalls, std::to_string(kCalls - whole) + " replies did not arrive whole");

  std::cout << "### Worker memory: " << kCalls << " calls answered with 16 MiB each\n\n"
            << "| process | before | peak | at rest after |\n|---|---:|---:|---:|\n";
  const auto row = [](const std::string& name, long before, long peak, long after) {
    std::cout << "| " << name << " | " << fixed(mib(before)) << " MiB | " << fixed(mib(peak))
              << " MiB | " << fixed(mib(after)) << " MiB |\n";
  };
  row("worker", worker_before, status_kib(worker, "VmHWM").value_or(0), resting_kib(worker));
  row("supervisor", supervisor_before, status_kib(sb.pid(), "VmHWM").value_or(0),
      resting_kib(sb.pid()));
  std::cout << "\n";
}

void measure_junk(const Options& options) {
  constexpr std::size_t kJunkMib = 50;
  const Secret computer = new_secret();
  const Secret client = new_secret();
  SwitchboardProcess sb(one_computer(computer, client, 8));
  const fs::path secret_file = sb.dir() / "alpha.secret";
  std::ofstream(secret_file) << computer.secret << "\n";
  const fs::path server = sb.dir() / "junk-server";
  std::ofstream(server) << "#!/bin/sh\nyes 'this line is not JSON-RPC' | head -c "
                        << kJunkMib * 1024 * 1024
                        << "\necho 'junk done' >&2\nexec cat >/dev/null\n";
  fs::permissions(server, fs::perms::owner_all);
  const fs::path log = sb.dir() / "connect.log";
  const pid_t connect =
      start_process({options.connect.string(), "--url",
                     "ws://127.0.0.1:" + std::to_string(sb.port()) + "/vm/attach", "--secret-file",
                     secret_file.string(), "--name", "alpha", "--", server.string()},
                    log, log);
  const bool done =
      eventually([&] { return read_file(log).find("junk done") != std::string::npos; }, 120s);
  stop_process(connect, 10s);
  require(done, "the junk server never finished: " + read_file(log).substr(0, 2000));

  const std::string text = read_file(log);
  std::size_t lines = 0;
  std::size_t warnings = 0;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    ++lines;
    if (line.find("not one JSON-RPC message") != std::string::npos) ++warnings;
  }
  std::cout << "### switchboard-connect's log: " << kJunkMib << " MiB of junk lines\n\n"
            << "| log lines | of them junk warnings | log bytes | lines per MiB of junk |\n"
            << "|---:|---:|---:|---:|\n"
            << "| " << lines << " | " << warnings << " | " << text.size() << " | "
            << fixed(static_cast<double>(lines) / kJunkMib, 2) << " |\n\n";
}

void measure_orphans(const Options& options) {
  constexpr int kWaves = 2;
  constexpr int kPerWave = 50;
  const std::string text(4 * 1024 * 1024, 'x');
  const Secret computer = new_secret();
  const Secret client = new_secret();
  SwitchboardProcess sb(one_computer(computer, client, 64).timeout_setting("write_secs", 1),
                        options.program);
  const auto fake = attach(sb, computer, client.secret, &text);

  std::vector<std::unique_ptr<RawSocket>> unread;
  for (int wave = 0; wave < kWaves; ++wave) {
    for (int i = 0; i < kPerWave; ++i) {
      const std::string body = tool_call(i, "echo").dump();
      unread.push_back(std::make_unique<RawSocket>(sb.port(), 4096));
      require(unread.back()->send_all(post_head(client.secret, body.size()) + body),
              "a call could not be sent");
    }
    // Cut: no connection of the switchboard's port is open but the computer's.
    require(eventually([&] { return established_on(sb.port()) <= 1; }, 60s),
            "the callers that never read were not cut");
  }
  const Orphans cut = orphans_holding_bytes(sb.port());
  const auto since = Clock::now();
  const bool gone = eventually([&] { return orphans_holding_bytes(sb.port()).sockets == 0; }, 180s);
  const auto lasted = std::chrono::duration_cast<std::chrono::seconds>(Clock::now() - since);
  std::cout << "### Orphans: " << kWaves * kPerWave
            << " callers cut at a 1 s write deadline, 4 MiB replies unread\n\n"
            << "| orphans right after | their unsent bytes | gone after |\n|---:|---:|---:|\n"
            << "| " << cut.sockets << " | " << fixed(cut.unsent_bytes / 1048576.0) << " MiB | "
            << (gone ? "" : "more than ") << lasted.count() << " s |\n\n";
}

void measure_audit(const Options& options) {
  const Secret computer = new_secret();
  const Secret client = new_secret();
  SwitchboardProcess sb(one_computer(computer, client, 1), options.program);
  const auto fake = attach(sb, computer, client.secret, nullptr);
  // One call held by the computer takes the caller's one place: every other is -32002.
  const std::string held = tool_call(0, "echo", json{{"mode", "hold"}}).dump();
  RawSocket holder(sb.port());
  require(holder.send_all(post_head(client.secret, held.size()) + held), "the held call failed");
  require(fake->wait_for_calls(1), "the held call never reached the computer");
  const auto audit_bytes = [&] {
    std::error_code ignored;
    return fs::file_size(sb.audit_path(), ignored);
  };
  const std::uintmax_t before = audit_bytes();

  long refused = 0;
  HttpConnection flooder(sb.port());
  const auto until = Clock::now() + std::chrono::seconds(options.flood_secs);
  for (long id = 1; Clock::now() < until; ++id) {
    const auto reply = flooder.request(
        mcp_request("/mcp/alpha", client.secret, tool_call(id, "echo", json{{"n", id}})));
    const json parsed = json::parse(reply.body, nullptr, false);
    if (parsed.is_object() && parsed.contains("error") && parsed["error"]["code"] == -32002)
      ++refused;
  }
  // The lines past the cap are summed up when the window ends: that line counts too.
  eventually([&] { return sb.audit().count("unrelayed_calls_suppressed") > 0; }, 65s);
  const std::uintmax_t grown = audit_bytes() - before;
  std::cout << "### Audit log: one caller flooding calls refused -32002 for " << options.flood_secs
            << " s\n\n"
            << "| calls refused | `call` lines | audit growth | bytes per refused call |\n"
            << "|---:|---:|---:|---:|\n"
            << "| " << refused << " | " << sb.audit().count("call") << " | " << grown << " bytes | "
            << fixed(refused ? static_cast<double>(grown) / refused : 0, 2) << " |\n\n";
}

// A caller that hangs up after its call's priming event and takes the response up with
// Last-Event-ID once the computer has answered: the ordinary reconnect, over and over. Each
// response given gives its call's place in the computer's cap back (docs/protocol.md,
// "Resumable streams"), so a computer with 4 places still answers after hundreds of them.
// A 2025-11-25 call in MCP session `session` that sends one progress notification and is
// then held by the computer; its caller hangs up after that event. The priming event's id.
std::string call_and_hang_up(const SwitchboardProcess& sb, const std::string& token, int id,
                             const std::string& session) {
  json call = tool_call(
      id, "echo", json{{"mode", "progress"}, {"every_ms", 0}, {"count", 1}, {"then", "hold"}});
  call["params"]["_meta"] = {{"progressToken", id}};
  HttpRequest post = mcp_request("/mcp/alpha", token, call);
  post.headers.emplace_back("MCP-Protocol-Version", "2025-11-25");
  post.headers.emplace_back("Mcp-Session-Id", session);
  HttpConnection caller(sb.port());
  caller.send(post);
  require(caller.read_head().is_event_stream(), "a call's answer was not an event stream");
  const auto event = caller.next_event();
  require(event && event->data.empty(), "a call's stream did not start with its priming");
  return event->id;
}

// The GET that takes a stream up after `last_event_id`.
HttpRequest resume_request(const std::string& token, const std::string& session,
                           const std::string& last_event_id) {
  return HttpRequest{.method = "GET",
                     .target = "/mcp/alpha",
                     .token = token,
                     .headers = {{"Accept", "text/event-stream"},
                                 {"MCP-Protocol-Version", "2025-11-25"},
                                 {"Mcp-Session-Id", session},
                                 {"Last-Event-ID", last_event_id}}};
}

void measure_resumes(const Options& options) {
  constexpr int kPlaces = 4;
  constexpr int kCycles = 200;
  const Secret computer = new_secret();
  const Secret client = new_secret();
  SwitchboardProcess sb(one_computer(computer, client, kPlaces), options.program);
  const auto fake = attach(sb, computer, client.secret, nullptr);
  const long rest_before = resting_kib(sb.pid());
  int given = 0;
  for (int i = 0; i < kCycles; ++i) {
    const std::string session = "resume-" + std::to_string(i);
    const std::string priming = call_and_hang_up(sb, client.secret, i, session);
    require(fake->wait_for_calls(static_cast<std::size_t>(i) + 1), "a call never arrived");
    fake->answer(fake->calls().back()["id"].get<std::uint64_t>(),
                 json{{"result", text_result("answered")}});
    HttpConnection resumer(sb.port());
    resumer.send(resume_request(client.secret, session, priming));
    resumer.read_head();
    // The progress it missed, then the response, and the stream ends.
    while (const auto event = resumer.next_event()) {
      const json message = event->json();
      if (message.is_object() && message.value("id", json()) == i) ++given;
    }
  }
  const json after =
      call_tool(sb.port(), "/mcp/alpha", client.secret, "echo", json{{"after", true}}, kCycles);
  const bool answered = after.contains("result");
  const long rest_after = resting_kib(sb.pid());
  std::cout << "### Resumes: " << kCycles << " calls taken up after a hang-up, " << kPlaces
            << " places at the computer\n\n"
            << "| responses given on resume | the next call | supervisor at rest before | after "
               "|\n|---:|---|---:|---:|\n"
            << "| " << given << " of " << kCycles << " | "
            << (answered ? "answered" : "refused: " + after.dump()) << " | "
            << fixed(mib(rest_before)) << " MiB | " << fixed(mib(rest_after)) << " MiB |\n\n";
  require(given == kCycles && answered, "a resume lost its response or a place");
}

// A kept response that a caller takes up again and again without reading: one call's 250 KB
// response, then 1000 GETs naming its stream from connections that never read. The
// response is given once, to the first; the others name a stream that no longer exists and
// get the stream of messages that belong to no call, each taking it over from the one
// before. So the supervisor holds the response once, and the kernel at most that one
// connection's send buffer of it.
void measure_unread_resumes(const Options& options) {
  constexpr int kResumes = 1000;
  const std::string text(250 * 1024, 'x');
  const Secret computer = new_secret();
  const Secret client = new_secret();
  SwitchboardProcess sb(one_computer(computer, client, 4), options.program);
  const auto fake = attach(sb, computer, client.secret, nullptr);
  const long rest_before = resting_kib(sb.pid());
  const std::string priming = call_and_hang_up(sb, client.secret, 1, "unread");
  require(fake->wait_for_calls(1), "the call never arrived");
  fake->answer(fake->calls().back()["id"].get<std::uint64_t>(),
               json{{"result", text_result(text)}});
  const std::string get = "GET /mcp/alpha HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer " +
                          client.secret +
                          "\r\nAccept: text/event-stream\r\nMCP-Protocol-Version: 2025-11-25"
                          "\r\nMcp-Session-Id: unread\r\nLast-Event-ID: " +
                          priming + "\r\n\r\n";
  std::vector<std::unique_ptr<RawSocket>> unread;
  for (int i = 0; i < kResumes; ++i) {
    unread.push_back(std::make_unique<RawSocket>(sb.port(), 4096));
    require(unread.back()->send_all(get), "a resume could not be sent");
  }
  // Every request answered: the switchboard holds an open connection for each.
  require(eventually([&] { return established_on(sb.port()) >= kResumes; }, 60s),
          "the resumes were not all taken");
  const long rest_after = resting_kib(sb.pid());
  const std::size_t unsent = unsent_on(sb.port());
  std::cout << "### Resumes that never read: " << kResumes
            << " GETs naming one kept 250 KB response\n\n"
            << "| supervisor at rest before | with them open | kernel bytes unsent to them |\n"
            << "|---:|---:|---:|\n"
            << "| " << fixed(mib(rest_before)) << " MiB | " << fixed(mib(rest_after)) << " MiB | "
            << fixed(static_cast<double>(unsent) / 1024.0) << " KiB |\n\n";
}

}  // namespace

int main(int argc, char** argv) {
  Options options;
  const std::set<std::string> known{"memory", "junk", "orphans", "audit", "resumes"};
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--program" && i + 1 < argc) {
      options.program = argv[++i];
    } else if (arg == "--connect" && i + 1 < argc) {
      options.connect = argv[++i];
    } else if (arg == "--only" && i + 1 < argc) {
      std::stringstream list(argv[++i]);
      for (std::string part; std::getline(list, part, ',');) {
        if (!known.count(part)) {
          std::cerr << "unknown part `" << part << "`\n" << kUsage;
          return 2;
        }
        options.only.insert(part);
      }
    } else if (arg == "--flood-secs" && i + 1 < argc) {
      options.flood_secs = std::max(1, std::atoi(argv[++i]));
    } else {
      std::cerr << kUsage;
      return 2;
    }
  }
  std::signal(SIGPIPE, SIG_IGN);
  harness::raise_descriptor_limit();  // a thousand unread resumes hold a socket each
  std::cout << "## Bounds, measured (" << options.program.string() << ", "
            << options.connect.string() << ")\n\n";
  try {
    if (options.wants("memory")) measure_memory(options);
    if (options.wants("junk")) measure_junk(options);
    if (options.wants("orphans")) measure_orphans(options);
    if (options.wants("audit")) measure_audit(options);
    if (options.wants("resumes")) {
      measure_resumes(options);
      measure_unread_resumes(options);
    }
  } catch (const std::exception& error) {
    std::cerr << "switchboard-bounds: " << error.what() << "\n";
    return 1;
  }
  return 0;
}
