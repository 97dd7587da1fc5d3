// `switchboard serve`, kept apart from main.cpp so that the command line does not compile
// Asio and Beast.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace sb::supervisor {

// Runs the supervisor until SIGTERM/SIGINT; returns the exit code. `argv` is the command
// line it was started with, which a switch in place executes again
// (docs/architecture.md, "Switching").
int run_serve(const std::string& config_path, std::string_view home, std::vector<std::string> argv);

}  // namespace sb::supervisor
