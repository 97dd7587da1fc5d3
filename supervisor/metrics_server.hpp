// The metrics listener (`metrics_listen`, docs/metrics.md): GET /metrics in the Prometheus
// text format and GET / the status page that polls it. No token: it shows names and
// counts, never a secret, an argument or a reply. Its own small connection cap and
// deadlines, so that a scraper, however it behaves, costs the relay next to nothing.
#pragma once

#include <boost/asio/io_context.hpp>
#include <functional>
#include <memory>
#include <string>

#include "shared/config.hpp"

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

// The status page (supervisor/status_page.html, built in).
std::string_view status_page_html();

}  // namespace sb::supervisor
