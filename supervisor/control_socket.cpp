#include "supervisor/control_socket.hpp"

#include <sys/stat.h>

#include <boost/asio/local/stream_protocol.hpp>
#include <boost/asio/read_until.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/streambuf.hpp>
#include <boost/asio/write.hpp>
#include <iomanip>
#include <nlohmann/json.hpp>
#include <sstream>

#include "ipc/asio_names.hpp"
#include "shared/log.hpp"
#include "supervisor/exhaustion.hpp"

namespace sb::supervisor {

using namespace sb::asio_names;
using local = net::local::stream_protocol;
using json = nlohmann::json;

// A request and its answer together take at most this long; a client that stops reading
// or never sends its line is closed, so idle connections cannot pile up.
constexpr auto kControlDeadline = std::chrono::seconds(5);

struct ControlServer::Impl : std::enable_shared_from_this<ControlServer::Impl> {
  Impl(net::io_context& io, std::filesystem::path path, const WorkerRegistry& workers)
      : acceptor(io),
        path(std::move(path)),
        workers(workers),
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
          exchange->reply = line == "workers" ? workers_json(self->workers.rows()) + "\n"
                                              : std::string("{\"error\":\"unknown request\"}\n");
          net::async_write(
              exchange->socket, net::buffer(exchange->reply),
              [exchange](boost::system::error_code, std::size_t) { exchange->deadline.cancel(); });
        });
  }

  local::acceptor acceptor;
  std::filesystem::path path;
  const WorkerRegistry& workers;
  AcceptPause pause;
};

ControlServer::ControlServer(net::io_context& io, std::filesystem::path path,
                             const WorkerRegistry& workers)
    : impl_(std::make_shared<Impl>(io, std::move(path), workers)) {
  const auto& where = impl_->path;
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

void ControlServer::stop() {
  if (!impl_->acceptor.is_open()) return;
  boost::system::error_code ignored;
  impl_->acceptor.close(ignored);
  impl_->pause.cancel();
  std::filesystem::remove(impl_->path, ignored);
}

std::string workers_json(const std::vector<WorkerRow>& rows) {
  json list = json::array();
  for (const auto& row : rows) {
    list.push_back({{"computer", row.computer},
                    {"pid", row.pid},
                    {"state", row.state},
                    {"attached_for_secs",
                     row.attached_for_secs >= 0 ? json(row.attached_for_secs) : json(nullptr)},
                    {"in_flight", row.in_flight},
                    {"max_in_flight", row.max_in_flight},
                    {"restarts", row.restarts},
                    {"resident_kib", row.resident_kib},
                    {"sandboxed", row.sandboxed},
                    {"torn_reads", row.torn_reads}});
  }
  return json{{"workers", std::move(list)}}.dump();
}

std::string workers_table(const std::string& json_text) {
  const json document = json::parse(json_text);
  std::ostringstream out;
  out << std::left << std::setw(20) << "COMPUTER" << std::setw(9) << "PID" << std::setw(13)
      << "STATE" << std::setw(14) << "ATTACHED" << std::setw(11) << "IN-FLIGHT" << std::setw(10)
      << "RESTARTS" << std::setw(10) << "MEMORY"
      << "SANDBOX\n";
  for (const auto& row : document.at("workers")) {
    const std::string attached =
        row.at("attached_for_secs").is_null()
            ? "-"
            : std::to_string(row.at("attached_for_secs").get<long>()) + "s";
    const std::string in_flight = std::to_string(row.at("in_flight").get<unsigned>()) + "/" +
                                  std::to_string(row.at("max_in_flight").get<unsigned>());
    const std::string memory = std::to_string(row.at("resident_kib").get<long>() / 1024) + " MiB";
    out << std::left << std::setw(20) << row.at("computer").get<std::string>() << std::setw(9)
        << row.at("pid").get<int>() << std::setw(13) << row.at("state").get<std::string>()
        << std::setw(14) << attached << std::setw(11) << in_flight << std::setw(10)
        << row.at("restarts").get<int>() << std::setw(10) << memory
        << (row.value("sandboxed", false) ? "seccomp" : "none") << "\n";
  }
  return out.str();
}

}  // namespace sb::supervisor
