// The metrics listener (`metrics_listen`, docs/metrics.md): GET /metrics in the Prometheus
// text format and GET / the status page that polls it. No token: it shows names and
// counts, never a secret, an argument or a reply. Its own small connection cap and
// deadlines, and only requests addressed to an IP address (no DNS rebinding).
#pragma once

#include <boost/asio/io_context.hpp>
#include <functional>
#include <memory>
#include <string>

#include "base/unique_fd.hpp"
#include "supervisor/config/config.hpp"

namespace sb::supervisor {

class MetricsServer {
 public:
  // `scrape` renders /metrics; it must not wait on anything. Binds now; throws
  // std::runtime_error "binding metrics_listen <addr>: <reason>".
  // With `listener`, one a switch in place carried for that address, it takes that up
  // instead of binding.
  MetricsServer(boost::asio::io_context& io, const config::ListenAddress& address,
                std::function<std::string()> scrape, base::UniqueFd listener = {});
  ~MetricsServer();
  void start();
  void stop();
  // For a switch in place (docs/architecture.md, "Switching"): the listener, no longer
  // accepted on here; scrapes under way are dropped with the process.
  base::UniqueFd release_listener();
  int listener_fd() const;  // for the service manager's store

 private:
  struct Impl;
  std::shared_ptr<Impl> impl_;
};

}  // namespace sb::supervisor
