// `switchboard workers`: asks the running supervisor on its control socket, once or every
// second (`--watch`), and prints what it answers (workers_table.hpp).
#include <unistd.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_future.hpp>
#include <csignal>
#include <iostream>
#include <optional>
#include <stdexcept>

#include "base/asio_names.hpp"
#include "supervisor/config/config.hpp"
#include "supervisor/control/control_client.hpp"
#include "supervisor/control/workers_command.hpp"
#include "supervisor/control/workers_table.hpp"

namespace sb::supervisor {
namespace {

using namespace sb::asio_names;
using namespace std::chrono_literals;

// The supervisor answers within its own 5 s deadline; one that is stopped never does.
constexpr auto kAnswerDeadline = 6s;

net::awaitable<ControlAnswer> ask(const std::filesystem::path& path,
                                  const std::string& config_path) {
  return ask_control(path, config_path, "workers", kAnswerDeadline);
}

// The table again every second, with calls/s and p50 since the last answer. A supervisor
// that does not answer (restarting, stopped) is said once per try, and the watch goes on.
net::awaitable<void> watch(const std::filesystem::path& path, const std::string& config_path) {
  net::steady_timer tick(co_await net::this_coro::executor);
  const bool terminal = ::isatty(STDOUT_FILENO) == 1;
  std::string earlier;
  auto earlier_at = std::chrono::steady_clock::now();
  for (;;) {
    const auto now = std::chrono::steady_clock::now();
    auto answer = co_await ask(path, config_path);
    std::cout << (terminal ? "\x1b[H\x1b[2J" : "");
    if (answer.reply) {
      const double seconds = std::chrono::duration<double>(now - earlier_at).count();
      std::cout << workers_table(*answer.reply, earlier, seconds);
      earlier = std::move(*answer.reply);
      earlier_at = now;
    } else {
      std::cout << answer.failure << "; asking again every second\n";
      earlier.clear();
    }
    std::cout << (terminal ? "" : "\n") << std::flush;
    tick.expires_at(now + 1s);
    co_await tick.async_wait(kAwait);
  }
}

}  // namespace

int run_workers(const std::string& config_path, std::string_view home, WorkersOutput output) {
  const auto config = config::load_config_file(config_path, home);
  const auto path = config.control_socket_path();
  net::io_context io;
  if (output == WorkersOutput::kWatch) {
    // Until Ctrl-C or SIGTERM, which end it with 0.
    net::signal_set stop(io, SIGINT, SIGTERM);
    stop.async_wait([&io](const boost::system::error_code&, int) { io.stop(); });
    net::co_spawn(io, watch(path, config_path), [](std::exception_ptr failure) {
      if (failure) std::rethrow_exception(failure);
    });
    io.run();
    return 0;
  }
  auto answer = net::co_spawn(io, ask(path, config_path), net::use_future);
  io.run();
  const ControlAnswer reply = answer.get();
  if (!reply.reply) throw std::runtime_error(reply.failure);
  std::cout << (output == WorkersOutput::kJson ? *reply.reply : workers_table(*reply.reply));
  return 0;
}

}  // namespace sb::supervisor
