// switchboard: the command line. `serve` runs the supervisor; the other subcommands are
// one-shot tools for operators.
#include <cstdlib>
#include <iostream>
#include <iterator>
#include <string>
#include <string_view>
#include <vector>

#include "shared/verifier.hpp"
#include "supervisor/config/config.hpp"
#include "supervisor/control/upgrade_command.hpp"
#include "supervisor/control/workers_command.hpp"
#include "supervisor/serve.hpp"

namespace {

constexpr std::string_view kUsage =
    R"(switchboard — relay MCP calls to computers that can only dial out

Usage:
  switchboard serve   [-c FILE]          run the switchboard (default FILE: switchboard.toml)
  switchboard check   [-c FILE]          validate FILE and print a summary
  switchboard workers [-c FILE] [--json | --watch]
                                         list the running supervisor's workers (--watch:
                                         every second, with calls/s and p50, until Ctrl-C)
  switchboard upgrade [-c FILE]          switch the running supervisor in place to the
                                         switchboard now installed, keeping every computer
                                         attached; exit 0 when each one was resumed
  switchboard gen-secret                 print a new secret and its verifier
  switchboard hash                       read a secret on stdin, print its verifier
  switchboard --version | --help
)";

struct Arguments {
  std::string command;
  std::string config_path = "switchboard.toml";
  sb::supervisor::WorkersOutput workers_output = sb::supervisor::WorkersOutput::kTable;
};

int usage_error(std::string_view why) {
  std::cerr << "error: " << why << "\n\n" << kUsage;
  return 2;
}

std::string home_directory() {
  const char* home = std::getenv("HOME");
  return home ? home : "";
}

int run_check(const std::string& path) {
  const auto config = sb::config::load_config_file(path, home_directory());
  const auto report = sb::config::check_report(config);
  for (const auto& line : report.stderr_lines) std::cerr << line << '\n';
  std::cout << report.summary << '\n';
  return 0;
}

int run_gen_secret() {
  const std::string secret = sb::generate_secret();
  std::cout << "secret:   " << secret << '\n'
            << "verifier: " << sb::render_verifier(sb::verifier_of(secret)) << '\n';
  return 0;
}

int run_hash() {
  const std::string input{std::istreambuf_iterator<char>(std::cin), {}};
  const auto first = input.find_first_not_of(" \t\r\n\f\v");
  const auto last = input.find_last_not_of(" \t\r\n\f\v");
  const std::string secret =
      first == std::string::npos ? std::string() : input.substr(first, last - first + 1);
  std::cout << sb::render_verifier(sb::verifier_of(secret)) << '\n';
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::vector<std::string_view> words(argv + 1, argv + argc);
  if (words.empty()) return usage_error("a subcommand is required");
  if (words[0] == "--help" || words[0] == "-h") {
    std::cout << kUsage;
    return 0;
  }
  if (words[0] == "--version" || words[0] == "-V") {
    std::cout << "switchboard " << SWITCHBOARD_VERSION << '\n';
    return 0;
  }

  Arguments args{.command = std::string(words[0])};
  const bool takes_config = args.command == "serve" || args.command == "check" ||
                            args.command == "workers" || args.command == "upgrade";
  for (std::size_t i = 1; i < words.size(); ++i) {
    if (takes_config && (words[i] == "-c" || words[i] == "--config")) {
      if (i + 1 == words.size()) return usage_error("-c needs a file");
      args.config_path = std::string(words[++i]);
    } else if (args.command == "workers" && (words[i] == "--json" || words[i] == "--watch")) {
      if (args.workers_output != sb::supervisor::WorkersOutput::kTable)
        return usage_error("--json and --watch are one or the other");
      args.workers_output = words[i] == "--json" ? sb::supervisor::WorkersOutput::kJson
                                                 : sb::supervisor::WorkersOutput::kWatch;
    } else {
      return usage_error("unexpected argument `" + std::string(words[i]) + "`");
    }
  }

  try {
    if (args.command == "check") return run_check(args.config_path);
    if (args.command == "gen-secret") return run_gen_secret();
    if (args.command == "hash") return run_hash();
    if (args.command == "serve")
      return sb::supervisor::run_serve(args.config_path, home_directory(),
                                       std::vector<std::string>(argv, argv + argc));
    if (args.command == "workers")
      return sb::supervisor::run_workers(args.config_path, home_directory(), args.workers_output);
    if (args.command == "upgrade")
      return sb::supervisor::run_upgrade(args.config_path, home_directory());
  } catch (const std::exception& error) {
    std::cerr << "Error: " << error.what() << '\n';
    return 1;
  }
  return usage_error("unknown subcommand `" + args.command + "`");
}
