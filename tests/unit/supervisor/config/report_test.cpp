// check_report: what `switchboard check` says beyond "ok" (docs/configuration.md,
// "Checking a file").
#include "supervisor/config/config.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <string_view>

#include "tests/unit/supervisor/config/config_test_support.hpp"

namespace sb::config::test {
namespace {

TEST(CheckReport, SummaryWithoutWarnings) {
  const auto report = sb::config::check_report(parse(kTwoComputers + kOwner));
  EXPECT_EQ(report.summary,
            "ok: listen 127.0.0.1:8790, 2 computer(s), 1 client(s), 0 pty attach(es)");
  // The wildcard note is printed but is not a warning.
  ASSERT_EQ(report.stderr_lines.size(), 1u);
  EXPECT_EQ(report.stderr_lines[0].rfind("note: [[client]] \"owner\" ", 0), 0u);
  EXPECT_TRUE(Contains(report.stderr_lines[0], "every computer"));
}

TEST(CheckReport, WarnsAboutUnusedComputers) {
  const auto report =
      sb::config::check_report(parse("listen = \"[::1]:8790\"\n" + kTwoComputers +
                                     client("c", "@T1@", "computers = { macmini = [\"a\"] }")));
  ASSERT_EQ(report.stderr_lines.size(), 1u);
  EXPECT_EQ(report.stderr_lines[0].rfind("warning: [[computer]] \"muse-vm\": ", 0), 0u);
  EXPECT_TRUE(Contains(report.stderr_lines[0], "no [[client]] and no [[pty_attach]]"));
  EXPECT_EQ(report.summary,
            "ok: listen [::1]:8790, 2 computer(s), 1 client(s), 0 pty attach(es), 1 warning(s)");
}

TEST(CheckReport, WarnsAboutUnreadableOrEmptySecretFiles) {
  TempDir dir;
  const fs::path good = dir.write("good.secret", "abcdef\n");
  const fs::path blank = dir.write("blank.secret", " \n\t\n");
  const fs::path missing = dir.path() / "missing.secret";
  const auto attach = [](std::string_view name, const fs::path& secret) {
    return pty(name, "url = \"wss://h/" + std::string(name) + "\"\nsecret_file = \"" +
                         secret.string() + "\"\ntools = [\"*\"]");
  };
  const auto report = sb::config::check_report(
      parse(kMacmini + attach("good", good) + attach("blank", blank) + attach("missing", missing)));
  ASSERT_EQ(report.stderr_lines.size(), 2u);
  EXPECT_EQ(report.stderr_lines[0].rfind("warning: [[pty_attach]] \"blank\": ", 0), 0u);
  EXPECT_TRUE(Contains(report.stderr_lines[0], blank.string()));
  EXPECT_TRUE(Contains(report.stderr_lines[0], "is empty"));
  EXPECT_EQ(report.stderr_lines[1].rfind("warning: [[pty_attach]] \"missing\": ", 0), 0u);
  EXPECT_TRUE(Contains(report.stderr_lines[1], missing.string()));
  EXPECT_TRUE(Contains(report.stderr_lines[1], "No such file or directory"));
  EXPECT_EQ(
      report.summary,
      "ok: listen 127.0.0.1:8790, 1 computer(s), 0 client(s), 3 pty attach(es), 2 warning(s)");
}

TEST(CheckReport, LinesComeInSpecOrder) {
  TempDir dir;
  const auto report = sb::config::check_report(
      parse(kTwoComputers + client("c", "@T1@", "computers = { macmini = [\"a\"] }") +
            pty("p", "url = \"wss://h/\"\nsecret_file = \"" + (dir.path() / "none").string() +
                         "\"\ntools = [\"*\"]\ncomputer = \"macmini\"")));
  ASSERT_EQ(report.stderr_lines.size(), 2u);
  EXPECT_TRUE(Contains(report.stderr_lines[0], "[[computer]] \"muse-vm\""));
  EXPECT_TRUE(Contains(report.stderr_lines[1], "[[pty_attach]] \"p\""));
  EXPECT_TRUE(Contains(report.summary, ", 2 warning(s)"));
}

}  // namespace
}  // namespace sb::config::test
