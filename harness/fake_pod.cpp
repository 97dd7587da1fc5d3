#include "harness/fake_pod.hpp"

#include <strings.h>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <boost/beast/websocket.hpp>
#include <boost/beast/websocket/ssl.hpp>
#include <condition_variable>
#include <deque>
#include <future>
#include <mutex>
#include <thread>

#include "base/asio_names.hpp"
#include "harness/outbox.hpp"

namespace harness {

using namespace sb::asio_names;
using json = nlohmann::json;

namespace {

constexpr std::string_view kAttachPrefix = "/tools/attach/";

// One upgraded tools socket. Written to on the I/O thread only; its record (messages,
// ended) is guarded by the pod's mutex.
class Socket {
 public:
  virtual ~Socket() = default;
  virtual void send(std::string text, bool binary) = 0;
  virtual void close(std::uint16_t code) = 0;
  virtual void drop() = 0;

  std::vector<json> messages;  // guarded
  bool ended = false;          // guarded
  std::size_t pings = 0;       // guarded
};

}  // namespace

bool PodDial::has_header(const std::string& name) const {
  for (const auto& [key, value] : headers) {
    if (key.size() == name.size() && ::strncasecmp(key.data(), name.data(), name.size()) == 0)
      return true;
  }
  return false;
}

struct FakePod::Impl {
  // Declared first, destroyed last: whatever its pending coroutines hold goes with it.
  net::io_context io;
  net::executor_work_guard<net::io_context::executor_type> work{io.get_executor()};
  FakePodOptions options;
  std::optional<ssl::context> tls;
  tcp::acceptor acceptor{io};
  int port = 0;
  std::thread thread;

  mutable std::mutex mutex;
  mutable std::condition_variable changed;
  std::deque<int> refusals;                              // guarded
  std::vector<PodDial> dials;                            // guarded
  std::size_t tls_failures = 0;                          // guarded
  std::vector<std::shared_ptr<Socket>> sessions;         // guarded
  std::vector<std::shared_ptr<Socket>> silent_sessions;  // I/O thread only

  template <typename Predicate>
  bool wait(Predicate predicate, std::chrono::milliseconds timeout) const {
    std::unique_lock lock(mutex);
    return changed.wait_for(lock, timeout, predicate);
  }

  template <typename Update>
  void update(Update change) {
    {
      std::lock_guard lock(mutex);
      change();
    }
    changed.notify_all();
  }

  // Runs `work` on the I/O thread and waits for it.
  template <typename Work>
  void on_io_thread(Work work_item) {
    std::promise<void> done;
    net::post(io, [&] {
      work_item();
      done.set_value();
    });
    done.get_future().wait();
  }

  std::shared_ptr<Socket> newest() const {
    std::lock_guard lock(mutex);
    return sessions.empty() ? nullptr : sessions.back();
  }

  template <typename Ws>
  class Session final : public Socket, public std::enable_shared_from_this<Session<Ws>> {
   public:
    Session(Impl& pod, Ws ws) : pod_(pod), ws_(std::move(ws)) {}
    Ws& ws() { return ws_; }

    net::awaitable<void> read_loop() {
      const auto self = this->shared_from_this();
      ws_.control_callback([this](websocket::frame_type kind, beast::string_view) {
        if (kind == websocket::frame_type::ping) pod_.update([&] { ++pings; });
      });
      beast::flat_buffer buffer;
      for (;;) {
        auto [error, bytes] = co_await ws_.async_read(buffer, kAwait);
        if (error) break;
        const std::string text = beast::buffers_to_string(buffer.data());
        buffer.consume(buffer.size());
        json parsed = json::parse(text, nullptr, false);
        pod_.update([&] { messages.push_back(parsed.is_discarded() ? json(text) : parsed); });
      }
      ws_.control_callback();
      pod_.update([&] { ended = true; });
    }

    void send(std::string text, bool binary) override {
      if (outbox_.push({std::move(text), binary})) write_front();
    }

    void close(std::uint16_t code) override {
      ws_.async_close(websocket::close_reason(static_cast<websocket::close_code>(code), "fake pod"),
                      [self = this->shared_from_this()](beast::error_code) {});
    }

    void drop() override {
      beast::error_code ignored;
      beast::get_lowest_layer(ws_).socket().shutdown(tcp::socket::shutdown_both, ignored);
      beast::get_lowest_layer(ws_).close();
    }

   private:
    void write_front() {
      ws_.binary(outbox_.front().second);
      ws_.async_write(net::buffer(outbox_.front().first),
                      [self = this->shared_from_this()](beast::error_code error, std::size_t) {
                        if (self->outbox_.written(!error)) self->write_front();
                      });
    }

    Impl& pod_;
    Ws ws_;
    Outbox<std::pair<std::string, bool>> outbox_;  // text, whether binary
  };

  net::awaitable<void> accept_loop() {
    for (;;) {
      auto [error, socket] = co_await acceptor.async_accept(kAwait);
      if (error) co_return;
      if (tls) {
        net::co_spawn(io, serve_tls(std::move(socket)), net::detached);
      } else {
        net::co_spawn(io, serve_upgrade(beast::tcp_stream(std::move(socket))), net::detached);
      }
    }
  }

  net::awaitable<void> serve_tls(tcp::socket socket) {
    beast::ssl_stream<beast::tcp_stream> stream(std::move(socket), *tls);
    beast::get_lowest_layer(stream).expires_after(std::chrono::seconds(10));
    auto [error] = co_await stream.async_handshake(ssl::stream_base::server, kAwait);
    if (error) {
      update([&] { ++tls_failures; });
      co_return;
    }
    co_await serve_upgrade(std::move(stream));
  }

  template <typename Stream>
  net::awaitable<void> serve_upgrade(Stream stream) {
    beast::flat_buffer buffer;
    http::request<http::string_body> request;
    beast::get_lowest_layer(stream).expires_after(std::chrono::seconds(10));
    auto [read_error, bytes] = co_await http::async_read(stream, buffer, request, kAwait);
    if (read_error) co_return;

    PodDial dial{.target = std::string(request.target()), .at = std::chrono::steady_clock::now()};
    for (const auto& field : request)
      dial.headers.emplace_back(std::string(field.name_string()), std::string(field.value()));
    if (const auto found = request.find(http::field::authorization); found != request.end())
      dial.authorization = std::string(found->value());
    {
      std::lock_guard lock(mutex);
      if (!refusals.empty()) {
        dial.status = refusals.front();
        refusals.pop_front();
      } else if (!dial.target.starts_with(kAttachPrefix) ||
                 dial.target.size() == kAttachPrefix.size()) {
        dial.status = 404;
      } else if (dial.authorization != "Bearer " + options.secret) {
        dial.status = 401;
      } else if (!websocket::is_upgrade(request)) {
        dial.status = 400;
      } else {
        dial.status = 101;
      }
    }

    if (dial.status != 101) {
      update([&] { dials.push_back(dial); });
      http::response<http::string_body> response{static_cast<http::status>(dial.status), 11};
      if (dial.status == 429) response.set(http::field::retry_after, "60");
      if (dial.status >= 500) response.body() = "bad gateway from the fake pod";
      response.keep_alive(false);
      response.prepare_payload();
      co_await http::async_write(stream, response, kAwait);
      beast::error_code ignored;
      beast::get_lowest_layer(stream).socket().shutdown(tcp::socket::shutdown_both, ignored);
      co_return;
    }

    beast::get_lowest_layer(stream).expires_never();
    using Ws = websocket::stream<Stream>;
    auto session = std::make_shared<Session<Ws>>(*this, Ws(std::move(stream)));
    session->ws().set_option(websocket::stream_base::timeout{
        std::chrono::seconds(10), websocket::stream_base::none(), false});
    session->ws().read_message_max(16 * 1024 * 1024);
    auto [accept_error] = co_await session->ws().async_accept(request, kAwait);
    if (accept_error) co_return;
    update([&] {
      dials.push_back(dial);
      sessions.push_back(session);
    });
    if (options.silent) {
      // Keep the socket open, unread, until the dialer gives up on it.
      silent_sessions.push_back(session);
      co_return;
    }
    co_await session->read_loop();
  }
};

FakePod::FakePod(FakePodOptions options) : impl_(std::make_unique<Impl>()) {
  impl_->options = std::move(options);
  if (impl_->options.tls) {
    impl_->tls.emplace(ssl::context::tls_server);
    impl_->tls->use_certificate_chain_file(impl_->options.tls->certificate_chain.string());
    impl_->tls->use_private_key_file(impl_->options.tls->private_key.string(), ssl::context::pem);
  }
  const tcp::endpoint endpoint(net::ip::make_address("127.0.0.1"), 0);
  impl_->acceptor.open(endpoint.protocol());
  impl_->acceptor.set_option(tcp::acceptor::reuse_address(true));
  impl_->acceptor.bind(endpoint);
  impl_->acceptor.listen();
  impl_->port = impl_->acceptor.local_endpoint().port();
  net::co_spawn(impl_->io, impl_->accept_loop(), net::detached);
  impl_->thread = std::thread([impl = impl_.get()] { impl->io.run(); });
}

FakePod::~FakePod() {
  impl_->on_io_thread([impl = impl_.get()] {
    beast::error_code ignored;
    impl->acceptor.close(ignored);
    std::lock_guard lock(impl->mutex);
    for (const auto& session : impl->sessions) session->drop();
  });
  impl_->work.reset();
  impl_->io.stop();
  impl_->thread.join();
}

int FakePod::port() const {
  return impl_->port;
}

std::string FakePod::url(const std::string& session, const std::string& host) const {
  return std::string(impl_->options.tls ? "wss://" : "ws://") + host + ":" +
         std::to_string(impl_->port) + std::string(kAttachPrefix) + session;
}

void FakePod::refuse_next(int status, int count) {
  std::lock_guard lock(impl_->mutex);
  for (int i = 0; i < count; ++i) impl_->refusals.push_back(status);
}

std::vector<PodDial> FakePod::dials() const {
  std::lock_guard lock(impl_->mutex);
  return impl_->dials;
}

std::size_t FakePod::dial_count() const {
  std::lock_guard lock(impl_->mutex);
  return impl_->dials.size();
}

std::size_t FakePod::tls_failures() const {
  std::lock_guard lock(impl_->mutex);
  return impl_->tls_failures;
}

std::size_t FakePod::sessions() const {
  std::lock_guard lock(impl_->mutex);
  return impl_->sessions.size();
}

bool FakePod::wait_dials(std::size_t count, std::chrono::milliseconds timeout) const {
  return impl_->wait([&] { return impl_->dials.size() >= count; }, timeout);
}

bool FakePod::wait_sessions(std::size_t count, std::chrono::milliseconds timeout) const {
  return impl_->wait([&] { return impl_->sessions.size() >= count; }, timeout);
}

bool FakePod::wait_tls_failures(std::size_t count, std::chrono::milliseconds timeout) const {
  return impl_->wait([&] { return impl_->tls_failures >= count; }, timeout);
}

void FakePod::send(const json& message) {
  send_text(message.dump());
}

void FakePod::send_text(std::string text, bool binary) {
  const auto session = impl_->newest();
  if (!session) throw std::runtime_error("fake pod: no session to send on");
  net::post(impl_->io, [session, text = std::move(text), binary]() mutable {
    session->send(std::move(text), binary);
  });
}

std::vector<json> FakePod::messages() const {
  std::lock_guard lock(impl_->mutex);
  return impl_->sessions.empty() ? std::vector<json>{} : impl_->sessions.back()->messages;
}

std::optional<json> FakePod::wait_reply(const json& id, std::chrono::milliseconds timeout) const {
  std::optional<json> found;
  impl_->wait(
      [&] {
        if (impl_->sessions.empty()) return false;
        for (const auto& message : impl_->sessions.back()->messages) {
          if (message.is_object() && message.contains("id") && message["id"] == id) {
            found = message;
            return true;
          }
        }
        return false;
      },
      timeout);
  return found;
}

json FakePod::request(const json& message, std::chrono::milliseconds timeout) {
  send(message);
  const auto reply = wait_reply(message.at("id"), timeout);
  return reply ? *reply : json(nullptr);
}

void FakePod::close(std::uint16_t code) {
  const auto session = impl_->newest();
  if (session) net::post(impl_->io, [session, code] { session->close(code); });
}

void FakePod::drop() {
  const auto session = impl_->newest();
  if (session) net::post(impl_->io, [session] { session->drop(); });
}

std::size_t FakePod::pings_received() const {
  std::lock_guard lock(impl_->mutex);
  return impl_->sessions.empty() ? 0 : impl_->sessions.back()->pings;
}

bool FakePod::session_ended() const {
  std::lock_guard lock(impl_->mutex);
  return !impl_->sessions.empty() && impl_->sessions.back()->ended;
}

bool FakePod::wait_session_ended(std::chrono::milliseconds timeout) const {
  return impl_->wait([&] { return !impl_->sessions.empty() && impl_->sessions.back()->ended; },
                     timeout);
}

}  // namespace harness
