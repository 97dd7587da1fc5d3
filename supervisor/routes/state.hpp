// What the supervisor's request handlers share: the config and the client table as of now
// (a reload swaps both), and the process's services. One per process, owned by `serve`,
// passed by reference.
#pragma once

#include <memory>

#include "supervisor/callers/client_table.hpp"
#include "supervisor/config/config.hpp"
#include "supervisor/http/resumable_streams.hpp"
#include "supervisor/mcp/request.hpp"

namespace sb::supervisor {

struct SupervisorState {
  std::shared_ptr<const config::Config> config;
  std::shared_ptr<const ClientTable> clients;
  McpServices services;
  ResumableStreams& resumable;
};

}  // namespace sb::supervisor
