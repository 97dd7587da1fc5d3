#include "supervisor/control/control_server.hpp"

#include <sys/stat.h>

#include <boost/asio/local/stream_protocol.hpp>
#include <boost/asio/read_until.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/streambuf.hpp>
#include <boost/asio/write.hpp>

#include "base/asio_names.hpp"
#include "shared/log.hpp"
#include "supervisor/bounds/exhaustion.hpp"
#include "supervisor/switching/descriptors.hpp"

namespace sb::supervisor {

using namespace sb::asio_names;
using local = net::local::stream_protocol;

// A request and its answer together take at most this long; a client that stops reading
// or never sends its line is closed, so idle connections cannot pile up.
constexpr auto kControlDeadline = std::chrono::seconds(5);

struct ControlServer::Impl : std::enable_shared_from_this<ControlServer::Impl> {
  Impl(net::io_context& io, std::filesystem::path path, std::function<std::string()> workers)
      : acceptor(io),
        path(std::move(path)),
        workers(std::move(workers)),
        pause(io.get_executor(), "control") {}

  void accept() {
    acceptor.async_accept(
        [self = shared_from_this()](boost::system::error_code error, local::socket socket) {
          if (error == net::error::operation_aborted || !self->acceptor.is_open()) return;
          if (self->pause.pause_on(error, [self] { self->accept(); })) return;
          if (!error) self->answer(std::make_shared<Exchange>(std::move(socket)));
          self->accept();
        });
  }

  struct Exchange {
    explicit Exchange(local::socket socket)
        : socket(std::move(socket)), deadline(this->socket.get_executor()), request(256) {}
    local::socket socket;
    net::steady_timer deadline;
    net::streambuf request;
    std::string reply;
  };

  // One request line in, one JSON document out, then the connection closes.
  void answer(std::shared_ptr<Exchange> exchange) {
    exchange->deadline.expires_after(kControlDeadline);
    exchange->deadline.async_wait(
        [weak = std::weak_ptr<Exchange>(exchange)](boost::system::error_code error) {
          auto alive = weak.lock();
          if (error || !alive) return;
          boost::system::error_code ignored;
          alive->socket.close(ignored);
        });
    net::async_read_until(
        exchange->socket, exchange->request, '\n',
        [self = shared_from_this(), exchange](boost::system::error_code error, std::size_t) {
          if (error) {
            exchange->deadline.cancel();
            return;
          }
          std::string line;
          std::istream(&exchange->request) >> line;
          if (line == "upgrade" && self->upgrade) {
            exchange->deadline.cancel();
            boost::system::error_code ignored;
            return self->upgrade(base::UniqueFd(exchange->socket.release(ignored)));
          }
          exchange->reply = line == "workers" ? self->workers() + "\n"
                                              : std::string("{\"error\":\"unknown request\"}\n");
          net::async_write(
              exchange->socket, net::buffer(exchange->reply),
              [exchange](boost::system::error_code, std::size_t) { exchange->deadline.cancel(); });
        });
  }

  local::acceptor acceptor;
  std::filesystem::path path;
  std::function<std::string()> workers;
  std::function<void(base::UniqueFd)> upgrade;
  AcceptPause pause;
};

ControlServer::ControlServer(net::io_context& io, std::filesystem::path path,
                             std::function<std::string()> workers, base::UniqueFd listener)
    : impl_(std::make_shared<Impl>(io, std::move(path), std::move(workers))) {
  const auto& where = impl_->path;
  // Its file must still be there too: a service manager may have emptied the directory.
  if (listener.valid() && bound_to(listener.get(), where) &&
      std::filesystem::is_socket(std::filesystem::symlink_status(where))) {
    impl_->acceptor.assign(local(), listener.release());
    return;
  }
  listener.reset();  // one handed over for another path
  if (std::filesystem::exists(std::filesystem::symlink_status(where))) {
    local::socket probe(io);
    boost::system::error_code error;
    probe.connect(local::endpoint(where.string()), error);
    if (!error) {
      throw std::runtime_error("control socket " + where.string() +
                               " answers: another switchboard is serving this config");
    }
    std::filesystem::remove(where);  // left behind by a supervisor that did not exit cleanly
  }
  try {
    std::filesystem::create_directories(where.parent_path().empty() ? "." : where.parent_path());
    const mode_t previous = ::umask(0177);  // the socket is born 0600
    impl_->acceptor.open(local());
    impl_->acceptor.bind(local::endpoint(where.string()));
    ::umask(previous);
    impl_->acceptor.listen();
  } catch (const std::exception& error) {
    throw std::runtime_error("binding the control socket " + where.string() + ": " + error.what());
  }
}

ControlServer::~ControlServer() {
  stop();
}

void ControlServer::start() {
  impl_->accept();
}

void ControlServer::on_upgrade(std::function<void(base::UniqueFd requester)> upgrade) {
  impl_->upgrade = std::move(upgrade);
}

int ControlServer::listener_fd() const {
  return impl_->acceptor.native_handle();
}

base::UniqueFd ControlServer::release_listener() {
  boost::system::error_code ignored;
  impl_->pause.cancel();
  impl_->acceptor.cancel(ignored);
  return base::UniqueFd(impl_->acceptor.release(ignored));
}

void ControlServer::stop() {
  if (!impl_->acceptor.is_open()) return;
  boost::system::error_code ignored;
  impl_->acceptor.close(ignored);
  impl_->pause.cancel();
  std::filesystem::remove(impl_->path, ignored);
}

}  // namespace sb::supervisor
