// The [[pty_attach]] dialers (docs/protocol.md, "Pod sockets"): the switchboard dials an
// openab-pty pod's tools socket, and then answers the pod as an MCP server, lending it one
// computer under the attach's policy through the same handle_mcp() that serves HTTP
// callers. One dialer per block present at start; each redials or stops by the rules of
// redial_policy.hpp.
//
// The policy (computer, tools, max_inflight) is looked up by attach name in the
// supervisor's current config on every pod request, so a reload changes it under a live
// socket (a computer renamed with the same verifier keeps serving the pod). The url and
// secret_file are fixed at start; a block removed by a reload keeps dialling under its
// last policy until a restart.
//
// The dial loop is here; its parts have files of their own: the secret file
// (shared/secret_file.hpp), TLS (shared/tls_client.hpp: the system store, SSL_CERT_FILE and
// SSL_CERT_DIR override it, with SNI and host name checks), and one upgraded socket
// (pod_socket.hpp).
// The URL was parsed by the config loader (shared/dial_target.hpp). Beast stays out of
// this header.
#pragma once

#include <boost/asio/io_context.hpp>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "shared/http_proxy.hpp"
#include "supervisor/config/config.hpp"
#include "supervisor/mcp/request.hpp"
#include "supervisor/pods/redial_policy.hpp"
#include "supervisor/telemetry/tracer.hpp"

namespace sb::supervisor {

class PodDialers {
 public:
  // `config` is the supervisor's own pointer, read as of each request (a reload swaps it);
  // `tracer` likewise (none: no spans).
  // `environment`: the service's proxy variables, used only by a block that says
  // proxy = "environment".
  PodDialers(boost::asio::io_context& io, const std::shared_ptr<const config::Config>& config,
             const McpServices& services, const std::shared_ptr<Tracer>& tracer,
             PodTimings timings = {}, ProxyEnvironment environment = {});
  ~PodDialers();
  PodDialers(const PodDialers&) = delete;
  PodDialers& operator=(const PodDialers&) = delete;

  // One dialer per [[pty_attach]] of the current config, each dialling at once.
  void start();
  // After a reload has swapped the config: logs each attach whose computer moved. (The
  // policy itself is read per request and needs no call.)
  void reloaded();
  // No more dials; every pod socket is dropped without a close frame.
  void stop();

 private:
  class Dialer;
  boost::asio::io_context& io_;
  const std::shared_ptr<const config::Config>& config_;
  const McpServices& services_;
  const std::shared_ptr<Tracer>& tracer_;
  PodTimings timings_;
  ProxyEnvironment environment_;
  std::vector<std::shared_ptr<Dialer>> dialers_;
};

}  // namespace sb::supervisor
