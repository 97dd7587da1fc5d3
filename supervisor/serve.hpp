// `switchboard serve`, kept apart from main.cpp so that the command line does not compile
// Asio and Beast.
#pragma once

#include <string>
#include <string_view>

namespace sb::supervisor {

// Runs the supervisor until SIGTERM/SIGINT; returns the exit code.
int run_serve(const std::string& config_path, std::string_view home);

}  // namespace sb::supervisor
