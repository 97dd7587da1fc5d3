// Shared pieces of the end-to-end tests: attaching a fake computer and waiting until the
// switchboard reports it ready, and small assertions on JSON-RPC replies.
#pragma once

#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <thread>

#include "shared/jsonrpc.hpp"
#include "tests/support/harness_for_gtest.hpp"

namespace sbtest {

using json = nlohmann::json;

// JSON-RPC error codes (docs/protocol.md, "Errors"; their values are pinned by
// tests/unit/shared/jsonrpc_test.cpp).
using sb::jsonrpc::kDisconnected;
using sb::jsonrpc::kInvalidRequest;
using sb::jsonrpc::kMethodNotFound;
using sb::jsonrpc::kOverloaded;
using sb::jsonrpc::kParseError;
using sb::jsonrpc::kTimeout;

// Whether /readyz/{computer} answers 200 for `token` (a caller granted that computer).
inline bool computer_ready(const SwitchboardProcess& sb, const std::string& token,
                           const std::string& computer) {
  try {
    return http_get(sb.port(), "/readyz/" + computer, token).status == 200;
  } catch (const std::exception&) {
    return false;
  }
}

inline bool wait_ready(const SwitchboardProcess& sb, const std::string& token,
                       const std::string& computer,
                       std::chrono::milliseconds timeout = kDefaultWait) {
  return eventually([&] { return computer_ready(sb, token, computer); }, timeout);
}

inline bool wait_not_ready(const SwitchboardProcess& sb, const std::string& token,
                           const std::string& computer,
                           std::chrono::milliseconds timeout = kDefaultWait) {
  return eventually([&] { return !computer_ready(sb, token, computer); }, timeout);
}

// A fake computer attached with `secret` and reported ready by the switchboard for
// `computer` (checked through `token`). Fails the test (and returns null) otherwise.
inline std::unique_ptr<FakeComputer> attach_ready(const SwitchboardProcess& sb,
                                                  const Secret& secret, const std::string& computer,
                                                  const std::string& token,
                                                  FakeComputerOptions options = {}) {
  options.secret = secret.secret;
  auto fake = std::make_unique<FakeComputer>(sb.port(), std::move(options));
  const int status = fake->attach();
  EXPECT_EQ(status, 101) << "attach of " << computer << " refused: " << fake->refusal().body;
  if (status != 101) return nullptr;
  EXPECT_TRUE(fake->wait_initialized()) << computer << " was never sent initialize";
  EXPECT_TRUE(wait_ready(sb, token, computer)) << computer << " never reported ready";
  return fake;
}

// How many times `part` occurs in `text` (a log, say).
inline std::size_t occurrences(const std::string& text, const std::string& part) {
  std::size_t count = 0;
  for (auto at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++count;
  return count;
}

inline int error_code(const json& reply) {
  if (!reply.contains("error")) return 0;
  return reply["error"].value("code", 0);
}

// The `params.arguments` a fake echoed back in a tool result.
inline json echoed(const json& reply) {
  return json::parse(result_text(reply), nullptr, false);
}

// The /computers entry for `name` as `token` sees it (null if absent).
inline json computers_entry(const SwitchboardProcess& sb, const std::string& token,
                            const std::string& name) {
  const auto list = http_get(sb.port(), "/computers", token).json();
  if (!list.is_array()) return nullptr;
  for (const auto& entry : list) {
    if (entry.value("name", "") == name) return entry;
  }
  return nullptr;
}

// The tools/call the fake received with these arguments (null if none).
inline json call_with_arguments(const FakeComputer& fake, const json& arguments) {
  for (const auto& call : fake.calls()) {
    if (call["params"].value("arguments", json()) == arguments) return call;
  }
  return nullptr;
}

inline json hold(int n) {
  return json{{"mode", "hold"}, {"n", n}};
}

// A tools/call on its own thread, for calls a test needs in flight while it acts.
class CallInFlight {
 public:
  CallInFlight(int port, std::string path, std::string token, std::string tool, json arguments,
               json id = 1)
      : thread_([=, this] {
          const auto started = Clock::now();
          try {
            reply_ = call_tool(port, path, token, tool, arguments, id);
          } catch (const std::exception& error) {
            failure_ = error.what();
          }
          elapsed_ = elapsed_since(started);
          done_ = true;
        }) {}
  ~CallInFlight() {
    if (thread_.joinable()) thread_.join();
  }
  // Waits (bounded) for the reply; null if it did not come or the request failed.
  json wait(std::chrono::milliseconds timeout = kDefaultWait) {
    if (!eventually([&] { return done_.load(); }, timeout)) {
      ADD_FAILURE() << "a call in flight did not finish in time";
      return nullptr;
    }
    thread_.join();
    if (!failure_.empty()) ADD_FAILURE() << failure_;
    return reply_;
  }
  bool done() const { return done_; }
  std::chrono::milliseconds elapsed() const { return elapsed_; }

 private:
  json reply_;
  std::string failure_;
  std::chrono::milliseconds elapsed_{0};
  std::atomic<bool> done_{false};
  std::thread thread_;
};

// Computer alpha, reached by owner (every tool, alpha by default) and alice (echo and
// slow). The default ConfigBuilder timeouts: 20 s, slow = 1 s.
class AlphaTest : public ::testing::Test {
 protected:
  Secret alpha_ = new_secret();
  Secret owner_ = new_secret();
  Secret alice_ = new_secret();

  ConfigBuilder config(std::optional<int> alpha_max = {}) const {
    return ConfigBuilder()
        .computer("alpha", alpha_, alpha_max)
        .client("owner", owner_, R"({ "*" = ["*"] })", "alpha")
        .client("alice", alice_, R"({ alpha = ["echo", "slow"] })");
  }

  // A fake alpha, attached and reported ready (null, with the test failed, otherwise).
  std::unique_ptr<FakeComputer> attach_alpha(const SwitchboardProcess& sb,
                                             FakeComputerOptions options = {}) const {
    return attach_ready(sb, alpha_, "alpha", owner_.secret, std::move(options));
  }
};

// Computers alpha and beta, reached by owner (every tool, alpha by default); `max_inflight`
// for each computer and for owner.
class TwoComputersTest : public ::testing::Test {
 protected:
  Secret alpha_ = new_secret();
  Secret beta_ = new_secret();
  Secret owner_ = new_secret();

  ConfigBuilder config(std::optional<int> max_inflight = {}) const {
    return ConfigBuilder()
        .computer("alpha", alpha_, max_inflight)
        .computer("beta", beta_, max_inflight)
        .client("owner", owner_, R"({ "*" = ["*"] })", "alpha", max_inflight);
  }

  // Fake computers attached and reported ready (null, with the test failed, otherwise).
  std::unique_ptr<FakeComputer> attach_alpha(const SwitchboardProcess& sb,
                                             FakeComputerOptions options = {}) const {
    return attach_ready(sb, alpha_, "alpha", owner_.secret, std::move(options));
  }
  std::unique_ptr<FakeComputer> attach_beta(const SwitchboardProcess& sb,
                                            FakeComputerOptions options = {}) const {
    return attach_ready(sb, beta_, "beta", owner_.secret, std::move(options));
  }
};

}  // namespace sbtest
