// The metrics listener (`metrics_listen`, docs/metrics.md): GET /metrics in the Prometheus
// text format and GET / the status page that polls it. No token: it shows names and
// counts, never a secret, an argument or a reply. Its own small connection cap and
// deadlines, and only requests addressed to an IP address (no DNS rebinding).
#pragma once

#include <boost/asio/io_context.hpp>
#include <functional>
#include <memory>
#include <string>

#include "supervisor/config/config.hpp"

namespace sb::supervisor {

class MetricsServer {
 public:
  // `scrape` renders /metrics; it must not wait on anything. Binds now; throws
  // std::runtime_error "binding metrics_listen <addr>: <reason>".
  MetricsServer(boost::asio::io_context& io, const config::ListenAddress& address,
                std::function<std::string()> scrape);
  ~MetricsServer();
  void start();
  void stop();

 private:
  struct Impl;
  std::shared_ptr<Impl> impl_;
};

}  // namespace sb::supervisor
