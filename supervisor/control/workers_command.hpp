// `switchboard workers`: asks the running supervisor for its worker table over the
// control socket, once as a table or as JSON, or every second until interrupted. Kept
// apart from main.cpp so that the command line does not compile Asio.
#pragma once

#include <string>
#include <string_view>

namespace sb::supervisor {

enum class WorkersOutput { kTable, kJson, kWatch };
int run_workers(const std::string& config_path, std::string_view home, WorkersOutput output);

}  // namespace sb::supervisor
