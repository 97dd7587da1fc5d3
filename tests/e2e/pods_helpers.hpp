// What the [[pty_attach]] tests share: an attach block, the fixture that lends computer
// alpha to a fake pod, and how long "did not redial" waits (well past the first backoff,
// which is at most 1.2 s).
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <memory>
#include <optional>
#include <string>

#include "harness/fake_pod.hpp"
#include "tests/e2e/e2e_helpers.hpp"

namespace sbtest {

inline constexpr auto kNoRedialWindow = std::chrono::seconds(3);

// One [[pty_attach]] block.
struct AttachBlock {
  std::string name;
  std::string url;
  fs::path secret_file;
  std::string tools = R"(["*"])";
  std::optional<std::string> computer;
  std::optional<int> max_inflight;
  std::string more;  // further lines of the block, as written

  std::string toml() const {
    std::string out =
        "[[pty_attach]]\nname = " + json(name).dump() + "\nurl = " + json(url).dump() +
        "\nsecret_file = " + json(secret_file.string()).dump() + "\ntools = " + tools + "\n";
    if (computer) out += "computer = " + json(*computer).dump() + "\n";
    if (max_inflight) out += "max_inflight = " + std::to_string(*max_inflight) + "\n";
    return out + more;
  }
};

inline void write_text(const fs::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
}

inline bool stderr_says(const SwitchboardProcess& sb, const std::string& text,
                        std::chrono::milliseconds timeout = kDefaultWait) {
  return eventually([&] { return sb.stderr_text().find(text) != std::string::npos; }, timeout);
}

inline json hold_call(int id) {
  return tool_call(id, "echo", json{{"mode", "hold"}, {"n", id}});
}

class PtyAttachE2e : public ::testing::Test {
 protected:
  TempDir scratch_;  // grants and certificates
  Secret alpha_ = new_secret();
  Secret beta_ = new_secret();
  Secret owner_ = new_secret();
  std::string grant_ = new_secret().secret;  // what the pod minted for the session

  // A secret_file holding the grant, with the trailing newline an editor leaves.
  fs::path grant_file(const std::string& name = "grant") {
    const fs::path path = scratch_.path() / (name + ".secret");
    write_text(path, grant_ + "\n");
    return path;
  }

  ConfigBuilder one_computer(std::optional<int> computer_max_inflight = {}) const {
    return ConfigBuilder()
        .computer("alpha", alpha_, computer_max_inflight)
        .client("owner", owner_, R"({ "*" = ["*"] })", "alpha");
  }

  // The switchboard with "alpha" attached and ready, and a pod it has dialled through one
  // [[pty_attach]] block "kiro" that lends "alpha".
  struct Lent {
    std::unique_ptr<FakePod> pod;
    std::unique_ptr<SwitchboardProcess> sb;
    std::unique_ptr<FakeComputer> computer;
  };

  struct LendOptions {
    std::string tools = R"(["*"])";
    std::optional<int> max_inflight;           // the attach's
    std::optional<int> computer_max_inflight;  // alpha's
    std::string more_config;                   // further tables, e.g. [telemetry]
  };

  Lent lend_alpha(const LendOptions& options) {
    Lent lent;
    lent.pod = std::make_unique<FakePod>(FakePodOptions{.secret = grant_});
    lent.sb = std::make_unique<SwitchboardProcess>(
        one_computer(options.computer_max_inflight)
            .block(AttachBlock{.name = "kiro",
                               .url = lent.pod->url("laptop"),
                               .secret_file = grant_file(),
                               .tools = options.tools,
                               .max_inflight = options.max_inflight}
                       .toml())
            .block(options.more_config));
    lent.computer = attach_ready(*lent.sb, alpha_, "alpha", owner_.secret);
    EXPECT_TRUE(lent.computer);
    if (lent.computer) {
      EXPECT_TRUE(lent.pod->wait_sessions(1, kDefaultWait)) << lent.sb->stderr_text();
    }
    return lent;
  }

  // Lent through an attach capped at one call, which the pod has used up: the computer
  // holds call 1.
  Lent start_with_held_call() {
    Lent lent = lend_alpha({.max_inflight = 1});
    if (HasFailure()) return lent;
    lent.pod->send(hold_call(1));
    EXPECT_TRUE(lent.computer->wait_for_calls(1));
    return lent;
  }
};

}  // namespace sbtest
