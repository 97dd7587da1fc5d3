// `switchboard upgrade`: asks the running supervisor to switch in place
// (docs/architecture.md, "Switching") and waits for the new build's answer: per computer
// whether its session was resumed or it dials again. Kept apart from main.cpp so that the
// command line does not compile Asio.
#pragma once

#include <string>
#include <string_view>

namespace sb::supervisor {

// 0 only when the switch happened and every computer attached before it was resumed.
int run_upgrade(const std::string& config_path, std::string_view home);

// The answer as the command prints it; its exit code in `status`.
std::string upgrade_report(const std::string& answer, int& status);

}  // namespace sb::supervisor
