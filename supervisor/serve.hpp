// The long-running and control subcommands, kept apart from main.cpp so that the command
// line does not compile Asio and Beast.
#pragma once

#include <string>
#include <string_view>

namespace sb::supervisor {

// `switchboard serve`: runs until SIGTERM/SIGINT; returns the exit code.
int run_serve(const std::string& config_path, std::string_view home);

// `switchboard workers`: asks the running supervisor for its worker table, once as a table
// or as JSON, or every second until interrupted.
enum class WorkersOutput { kTable, kJson, kWatch };
int run_workers(const std::string& config_path, std::string_view home, WorkersOutput output);

}  // namespace sb::supervisor
