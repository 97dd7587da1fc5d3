// switchboard-connect: makes an MCP server a computer (docs/connect.md).
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <csignal>
#include <cstdlib>
#include <exception>
#include <iostream>
#include <utility>

#include "base/asio_names.hpp"
#include "connect/connector.hpp"
#include "connect/options.hpp"
#include "shared/log.hpp"
#include "shared/service_notify.hpp"
#include "shared/tls_client.hpp"

namespace {

using namespace sb::asio_names;
using namespace sb::connect;

const char* environment(const char* name) {
  const char* value = std::getenv(name);
  return value ? value : "";
}

}  // namespace

int main(int argc, char** argv) {
  // A server that has exited must not take us with it when we write to its stdin.
  std::signal(SIGPIPE, SIG_IGN);
  Options options;
  sb::Timings timings;
  try {
    options = parse_options(std::vector<std::string>(argv + 1, argv + argc), environment("HOME"),
                            environment("CREDENTIALS_DIRECTORY"));
    choose_proxies(options, sb::proxy_environment());
    if (options.help) {
      std::cout << kUsage;
      return kExitStopped;
    }
    if (options.version) {
      std::cout << "switchboard-connect " << SWITCHBOARD_VERSION << "\n";
      return kExitStopped;
    }
    timings = sb::timings_from_environment();
  } catch (const std::exception& error) {
    std::cerr << "switchboard-connect: " << error.what() << "\n\n" << kUsage;
    return kExitUsage;
  }
  std::shared_ptr<ssl::context> tls;
  if (any_tls(options)) {
    try {
      tls = sb::make_tls_context(options.ca_file);
    } catch (const std::exception& error) {
      sb::log_error("cannot set up TLS", {{"error", error.what()}});
      return kExitFatal;
    }
  }

  net::io_context io;
  const sb::ServiceNotifier notifier(environment("NOTIFY_SOCKET"));
  // Ready once a caller can reach the computer: when the first link attaches
  // (docs/connect.md, "As a service").
  bool ready = false;
  Connector connector(io, options, tls, timings, [&](std::size_t up, std::size_t of) {
    notifier.status("attached to " + std::to_string(up) + " of " + std::to_string(of) +
                    " switchboards");
    if (up > 0 && !std::exchange(ready, true)) notifier.ready();
  });
  int exit_code = kExitFatal;

  net::signal_set signals(io, SIGINT, SIGTERM);
  net::steady_timer give_up(io);
  signals.async_wait([&](const boost::system::error_code& error, int) {
    if (error) return;
    sb::log_info("stopping: closing every attach with 1000 and stopping the MCP server",
                 {{"computer", options.name}});
    notifier.stopping();
    connector.stop();
    // Bounded: the close handshake and the server's grace, not forever.
    give_up.expires_after(timings.server_grace + std::chrono::seconds(5));
    give_up.async_wait([&](const boost::system::error_code& cancelled) {
      if (!cancelled) io.stop();
    });
  });
  net::co_spawn(io, connector.run(), [&](std::exception_ptr failure, int code) {
    exit_code = code;
    if (failure) {
      try {
        std::rethrow_exception(failure);
      } catch (const std::exception& error) {
        sb::log_error("fatal", {{"error", error.what()}});
      }
      exit_code = kExitFatal;
    }
    io.stop();
  });
  io.run();
  return exit_code;
}
