#include "bench/fake_computer.hpp"

#include <pthread.h>

#include <array>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/websocket.hpp>
#include <functional>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <thread>
#include <vector>

#include "base/asio_names.hpp"
#include "harness/outbox.hpp"

namespace sbbench {
namespace {

using namespace sb::asio_names;
using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

constexpr std::size_t kMaxMessageBytes = 16 * 1024 * 1024;  // what a daemon accepts
// A client masks what it sends, through a buffer of this size: big enough that a 16 MiB
// result is not written 4 KiB at a time (Beast's default), which no real daemon does.
constexpr std::size_t kWriteBufferBytes = 1024 * 1024;

std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch())
      .count();
}

std::string base64_of_random(std::size_t characters) {
  static constexpr char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::mt19937_64 random(characters);
  std::string text(characters, 'A');
  for (std::size_t i = 0; i < characters; i += 8) {
    std::uint64_t bits = random();
    for (std::size_t j = i; j < std::min(characters, i + 8); ++j, bits >>= 6)
      text[j] = kAlphabet[bits & 63];
  }
  return text;
}

// One reply: a head, then optionally a shared payload and a tail, written as one message
// without copying the payload.
struct Reply {
  std::string head;
  std::shared_ptr<const std::string> payload;
  std::string tail;
};

}  // namespace

std::shared_ptr<const std::string> image_data(std::size_t bytes) {
  static std::mutex mutex;
  static std::map<std::size_t, std::shared_ptr<const std::string>> cache;
  std::lock_guard lock(mutex);
  auto& entry = cache[bytes];
  if (!entry) entry = std::make_shared<const std::string>(base64_of_random(bytes));
  return entry;
}

struct ComputerFleet::Impl {
  net::io_context io{1};
  net::executor_work_guard<net::io_context::executor_type> work{io.get_executor()};
  std::thread thread;

  // The notifications the bench times.
  static void notified(ComputerFleet& fleet, const std::string& method) {
    if (method == "notifications/initialized") {
      fleet.last_initialized_ns_.store(now_ns());
      fleet.initialized_.fetch_add(1);
    } else if (method == "notifications/cancelled") {
      fleet.last_cancel_ns_.store(now_ns());
      fleet.cancels_.fetch_add(1);
    }
  }

  // A tools/call's answer, as its arguments ask (fake_computer.hpp).
  static std::vector<Reply> call(ComputerFleet& fleet, const json& message,
                                 const std::string& head) {
    const json empty = json::object();
    const auto params = message.find("params");
    const bool has_params = params != message.end() && params->is_object();
    const json& arguments = has_params ? params->value("arguments", empty) : empty;
    if (!arguments.is_object())
      return {Reply{head + R"("error":{"code":-32602,"message":"no arguments"}})"}};
    if (arguments.value("hold", false)) {
      fleet.held_.fetch_add(1);
      return {};
    }
    const long number = fleet.calls_.fetch_add(1) + 1;
    const bool fault = fleet.fault_every_ > 0 && number % fleet.fault_every_ == 0;
    const std::size_t bytes = arguments.value("bytes", std::size_t{0});
    std::vector<Reply> replies;
    const int progress = arguments.value("progress", 0);
    if (progress > 0 && has_params) {
      const json token = params->value("_meta", empty).value("progressToken", json());
      for (int i = 1; i <= progress; ++i) {
        replies.push_back(
            Reply{json{{"jsonrpc", "2.0"},
                       {"method", "notifications/progress"},
                       {"params", {{"progressToken", token}, {"progress", i}, {"total", progress}}}}
                      .dump()});
      }
    }
    const int list_changes = arguments.value("list_changes", 0);
    for (int i = 0; i < list_changes; ++i) {
      replies.push_back(Reply{R"({"jsonrpc":"2.0","method":"notifications/tools/list_changed"})"});
    }
    if (bytes == 0) {
      const std::string nonce = arguments.value("nonce", "");
      replies.push_back(Reply{head + R"("result":{"content":[{"type":"text","text":)" +
                              json(fault ? "corrupted" : nonce).dump() +
                              R"(}],"isError":false}})"});
      return replies;
    }
    auto data = image_data(bytes);
    if (fault) data = std::make_shared<const std::string>(data->substr(0, bytes / 2));
    replies.push_back(
        Reply{head + R"("result":{"content":[{"type":"image","mimeType":"image/png","data":")",
              std::move(data), R"("}],"isError":false}})"});
    return replies;
  }

  // MCP as a computer serves it: a pure function of one message (and the fleet's counters).
  static std::vector<Reply> answer(ComputerFleet& fleet, std::string_view text) {
    const json message = json::parse(text, nullptr, false);
    if (!message.is_object()) return {};
    const auto method = message.find("method");
    if (method == message.end() || !method->is_string()) return {};  // a response
    const auto& name = method->get_ref<const std::string&>();
    const auto id = message.find("id");
    if (id == message.end()) {
      notified(fleet, name);
      return {};
    }
    const std::string head = R"({"id":)" + id->dump() + R"(,"jsonrpc":"2.0",)";
    if (name == "initialize") {
      return {Reply{head + R"("result":{"capabilities":{"tools":{"listChanged":false}},)"
                           R"("protocolVersion":"2025-06-18",)"
                           R"("serverInfo":{"name":"bench-computer","version":"1"}}})"}};
    }
    if (name == "ping") return {Reply{head + R"("result":{}})"}};
    if (name != "tools/call")
      return {Reply{head + R"("error":{"code":-32601,"message":"method not found"}})"}};
    return call(fleet, message, head);
  }
};

namespace {

class Session : public std::enable_shared_from_this<Session> {
 public:
  using Answer = std::function<std::vector<Reply>(std::string_view)>;
  Session(net::io_context& io, Answer answer) : ws_(io), answer_(std::move(answer)) {}

  net::awaitable<bool> dial(int port, std::string secret, std::string target) {
    auto& layer = beast::get_lowest_layer(ws_);
    const auto [connect_error] = co_await layer.socket().async_connect(
        tcp::endpoint(net::ip::address_v4::loopback(), static_cast<unsigned short>(port)), kAwait);
    if (connect_error) co_return false;
    layer.socket().set_option(tcp::no_delay(true));
    ws_.set_option(websocket::stream_base::decorator([secret](websocket::request_type& request) {
      request.set(http::field::authorization, "Bearer " + secret);
    }));
    ws_.read_message_max(kMaxMessageBytes);
    ws_.write_buffer_bytes(kWriteBufferBytes);
    ws_.text(true);
    const auto [upgrade_error] =
        co_await ws_.async_handshake("127.0.0.1:" + std::to_string(port), target, kAwait);
    co_return !upgrade_error;
  }

  // Reads until the socket ends; answers are queued for the writer at once.
  net::awaitable<void> serve() {
    for (;;) {
      const auto [error, size] = co_await ws_.async_read(buffer_, kAwait);
      if (error) break;
      const auto data = buffer_.cdata();
      auto replies = answer_(std::string_view(static_cast<const char*>(data.data()), data.size()));
      buffer_.consume(buffer_.size());
      for (auto& reply : replies) send(std::move(reply));
    }
    outbox_.end();
  }

 private:
  void send(Reply reply) {
    if (outbox_.push(std::move(reply))) write_front();
  }

  void write_front() {
    const Reply& next = outbox_.front();
    std::array<net::const_buffer, 3> parts{
        net::buffer(next.head), next.payload ? net::buffer(*next.payload) : net::const_buffer(),
        net::buffer(next.tail)};
    // After a failed write the reader sees the same broken socket and ends the session.
    ws_.async_write(parts, [self = shared_from_this()](beast::error_code error, std::size_t) {
      if (self->outbox_.written(!error)) self->write_front();
    });
  }

  websocket::stream<beast::tcp_stream> ws_;
  Answer answer_;
  beast::flat_buffer buffer_;
  harness::Outbox<Reply> outbox_;
};

}  // namespace

ComputerFleet::ComputerFleet(int fault_every)
    : impl_(std::make_shared<Impl>()), fault_every_(fault_every) {
  impl_->thread = std::thread([impl = impl_.get()] { impl->io.run(); });
  ::pthread_setname_np(impl_->thread.native_handle(), "sb-computers");  // for perf and top
}

ComputerFleet::~ComputerFleet() {
  impl_->work.reset();
  impl_->io.stop();
  impl_->thread.join();
  impl_.reset();  // sessions go with the io_context, before the counters they point at
}

void ComputerFleet::dial(int port, const std::string& secret, const std::string& target) {
  net::post(impl_->io, [this, port, secret, target] {
    auto session = std::make_shared<Session>(
        impl_->io, [this](std::string_view text) { return Impl::answer(*this, text); });
    net::co_spawn(
        impl_->io,
        [this, session, port, secret, target]() -> net::awaitable<void> {
          if (!co_await session->dial(port, secret, target)) {
            dial_failures_.fetch_add(1);
            co_return;
          }
          last_upgraded_ns_.store(now_ns());
          upgraded_.fetch_add(1);
          co_await session->serve();
        },
        net::detached);
  });
}

std::chrono::steady_clock::time_point ComputerFleet::last_upgraded() const {
  return Clock::time_point(std::chrono::nanoseconds(last_upgraded_ns_.load()));
}

std::chrono::steady_clock::time_point ComputerFleet::last_cancel() const {
  return Clock::time_point(std::chrono::nanoseconds(last_cancel_ns_.load()));
}

std::chrono::steady_clock::time_point ComputerFleet::last_initialized() const {
  return Clock::time_point(std::chrono::nanoseconds(last_initialized_ns_.load()));
}

bool ComputerFleet::wait_initialized(int count, std::chrono::milliseconds timeout) const {
  const auto deadline = Clock::now() + timeout;
  while (initialized_.load() < count) {
    if (Clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return true;
}

}  // namespace sbbench
