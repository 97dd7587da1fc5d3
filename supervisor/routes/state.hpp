// What the supervisor's request handlers share: the config, the client table and the OAuth
// sign-in as of now (a reload swaps them), and the process's services. One per process, owned by
// `serve`, passed by reference.
#pragma once

#include <memory>

#include "supervisor/callers/client_table.hpp"
#include "supervisor/config/config.hpp"
#include "supervisor/http/resumable_streams.hpp"
#include "supervisor/mcp/request.hpp"
#include "supervisor/oauth/sign_in.hpp"
#include "supervisor/telemetry/tracer.hpp"

namespace sb::supervisor {

struct SupervisorState {
  std::shared_ptr<const config::Config> config;
  std::shared_ptr<const ClientTable> clients;
  std::shared_ptr<oauth::SignIn> sign_in;  // none: static tokens only
  std::shared_ptr<Tracer> tracer;          // none: no traces ([telemetry])
  McpServices services;
  ResumableStreams& resumable;
};

}  // namespace sb::supervisor
