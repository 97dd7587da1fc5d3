// The `switchboard` command line that sits on top of the loader (check, gen-secret, hash,
// version), run as a separate process.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <string_view>

#include "harness/process.hpp"
#include "tests/unit/supervisor/config/config_test_support.hpp"

namespace sb::config::test {
namespace {

struct RunResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};

std::string shell_quote(std::string_view text) {
  std::string out = "'";
  for (const char c : text) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out.push_back(c);
    }
  }
  return out + "'";
}

std::string read_file(const fs::path& path) {
  std::ifstream file(path, std::ios::binary);
  std::stringstream buffer;
  buffer << file.rdbuf();
  return buffer.str();
}

// Runs `switchboard <args>` with `input` on stdin; stdout and stderr are kept apart.
RunResult run_switchboard(const TempDir& dir, std::string_view args, std::string_view input = "") {
  const fs::path in = dir.write("stdin.txt", input);
  const fs::path err = dir.path() / "stderr.txt";
  const std::string command = shell_quote((harness::bin_dir() / "switchboard").string()) + " " +
                              std::string(args) + " <" + shell_quote(in.string()) + " 2>" +
                              shell_quote(err.string());
  RunResult result;
  FILE* pipe = ::popen(command.c_str(), "r");
  if (!pipe) return result;
  char buffer[4096];
  for (std::size_t n; (n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0;) {
    result.out.append(buffer, n);
  }
  const int status = ::pclose(pipe);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  result.err = read_file(err);
  return result;
}

TEST(Cli, CheckGoodFilePrintsTheSummary) {
  TempDir dir;
  const fs::path path = dir.write("good.toml", fill(kTwoComputers + kOwner));
  const RunResult result = run_switchboard(dir, "check -c " + shell_quote(path.string()));
  EXPECT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(result.out,
            "ok: listen 127.0.0.1:8790, 2 computer(s), 1 client(s), 0 pty attach(es)\n");
  EXPECT_TRUE(Contains(result.err, "note: [[client]] \"owner\""));
}

TEST(Cli, CheckWithWarningsStillExitsZero) {
  TempDir dir;
  const fs::path path = dir.write(
      "warn.toml", fill(kTwoComputers + client("c", "@T1@", "computers = { macmini = [\"a\"] }")));
  const RunResult result = run_switchboard(dir, "check --config " + shell_quote(path.string()));
  EXPECT_EQ(result.exit_code, 0);
  EXPECT_TRUE(Contains(result.err, "warning: [[computer]] \"muse-vm\""));
  EXPECT_TRUE(Contains(result.out, ", 1 warning(s)\n"));
}

TEST(Cli, CheckBadFileExitsOneWithTheReason) {
  TempDir dir;
  const fs::path path = dir.write("bad.toml", fill(kV1 + kMuse + kOwner));
  const RunResult result = run_switchboard(dir, "check -c " + shell_quote(path.string()));
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_TRUE(result.out.empty()) << result.out;
  EXPECT_TRUE(Contains(result.err, "in " + path.string()));
  EXPECT_TRUE(Contains(result.err, "[vm] and [[computer]]"));
}

TEST(Cli, CheckMissingFileExitsOne) {
  TempDir dir;
  const RunResult result =
      run_switchboard(dir, "check -c " + shell_quote((dir.path() / "none.toml").string()));
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_TRUE(Contains(result.err, "reading "));
}

TEST(Cli, GenSecretPrintsASecretAndItsVerifier) {
  TempDir dir;
  const RunResult result = run_switchboard(dir, "gen-secret");
  EXPECT_EQ(result.exit_code, 0);
  std::smatch match;
  const std::regex format("secret:   ([0-9a-f]{64})\nverifier: (sha256:[0-9a-f]{64})\n");
  ASSERT_TRUE(std::regex_match(result.out, match, format)) << result.out;
  const std::string secret = match[1];
  const std::string printed = match[2];
  // The verifier is of the 64 hex characters, not of the raw bytes.
  EXPECT_EQ(printed, verifier(secret));
  const RunResult hashed = run_switchboard(dir, "hash", secret + "\n");
  EXPECT_EQ(hashed.out, printed + "\n");
}

TEST(Cli, HashTrimsStdin) {
  TempDir dir;
  const RunResult result = run_switchboard(dir, "hash", "  \tabc \r\n\n");
  EXPECT_EQ(result.exit_code, 0);
  EXPECT_EQ(result.out, verifier("abc") + "\n");
}

TEST(Cli, VersionPrintsTheProgramAndVersion) {
  TempDir dir;
  for (const char* flag : {"--version", "-V"}) {
    const RunResult result = run_switchboard(dir, flag);
    EXPECT_EQ(result.exit_code, 0);
    EXPECT_EQ(result.out, std::string("switchboard ") + SWITCHBOARD_VERSION + "\n");
  }
}

TEST(Cli, UsageErrorsExitTwo) {
  TempDir dir;
  EXPECT_EQ(run_switchboard(dir, "frobnicate").exit_code, 2);
  EXPECT_EQ(run_switchboard(dir, "").exit_code, 2);
  EXPECT_EQ(run_switchboard(dir, "check --bogus").exit_code, 2);
  EXPECT_EQ(run_switchboard(dir, "check -c").exit_code, 2);
}

}  // namespace
}  // namespace sb::config::test
