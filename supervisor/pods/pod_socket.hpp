// One upgraded openab-pty pod socket (docs/protocol.md, "Pod sockets"): the pod's
// requests served through northbound MCP, the 64-permit ceiling, the outbound queue and
// the keepalive (Socket), and the WebSocket I/O over plain TCP or TLS (SocketOver).
// Included by the dialer alone (pod_dialer.cpp), which dials and owns each socket.
#pragma once

#include <array>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/ssl.hpp>
#include <boost/beast/websocket.hpp>
#include <boost/beast/websocket/ssl.hpp>
#include <deque>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <variant>

#include "base/asio_names.hpp"
#include "shared/jsonrpc.hpp"
#include "shared/log.hpp"
#include "shared/tunnel_stream.hpp"
#include "supervisor/mcp/caller_message.hpp"
#include "supervisor/mcp/handler.hpp"
#include "supervisor/mcp/request_span.hpp"
#include "supervisor/pods/redial_policy.hpp"
#include "supervisor/telemetry/tracer.hpp"

namespace sb::supervisor::pod {

using namespace sb::asio_names;
using json = nlohmann::json;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// The most a pod may have in progress on one socket; past it a request with an id is
// answered -32002 and not processed (docs/protocol.md, "Pod sockets").
inline constexpr int kMaxConcurrentPodRequests = 64;
inline constexpr std::size_t kMaxInboundBytes = 4 * 1024 * 1024;  // one message from the pod
inline constexpr std::size_t kOutboundQueue = 64;                 // messages waiting to be sent
inline constexpr std::string_view kBusyMessage = "too many requests in flight on this attach";

// Over TCP to the pod, or to its proxy (TLS to an https:// one inside TunnelStream).
using PlainWs = websocket::stream<TunnelStream>;
using TlsWs = websocket::stream<beast::ssl_stream<TunnelStream>>;

// What a socket needs from its dialer.
class SocketOwner {
 public:
  virtual ~SocketOwner() = default;
  // The attach's policy as of now, for one request.
  virtual CallerContext request_context() = 0;
  virtual const McpServices& services() const = 0;
  virtual std::shared_ptr<const config::Config> config() const = 0;
  virtual std::shared_ptr<Tracer> tracer() const = 0;  // none: no spans
  virtual const PodTimings& timings() const = 0;
};

// One upgraded pod socket, independent of its transport: the pod's requests, the 64-permit
// ceiling, the outbound queue and the keepalive. SocketOver<Ws> adds the I/O.
class Socket : public std::enable_shared_from_this<Socket> {
 public:
  Socket(net::io_context& io, std::shared_ptr<SocketOwner> owner)
      : owner_(std::move(owner)), ping_timer_(io) {}
  virtual ~Socket() = default;
  Socket(const Socket&) = delete;
  Socket& operator=(const Socket&) = delete;

  // Ends the socket once: the transport is dropped (no close frame), the keepalive stops,
  // and every request still in progress is abandoned (its share given back at once).
  void end() {
    if (ended_) return;
    ended_ = true;
    ping_timer_.cancel();
    close_transport();
    auto pending = std::move(pending_);
    pending_.clear();
    waiting_.clear();
    for (auto& [key, abandon] : pending) {
      if (abandon) abandon();
    }
  }

 protected:
  struct Outbound {
    bool ping = false;
    ReplyText text;
  };

  virtual void write_front() = 0;  // starts sending queue_.front()
  virtual void close_transport() = 0;

  void heard() { last_heard_ = Clock::now(); }

  // One message from the pod, read as any caller's is (read_caller_message): a request or
  // notification (an object with a `method` member), or its answer to a request the
  // computer routed to it (an object with an `id` and a `result` or `error`); what a caller
  // would be refused, and anything else (scalars, answers to nothing), is ignored.
  void on_message(const std::string& text) {
    if (ended_) return;
    auto read = read_caller_message(text);
    if (!std::holds_alternative<json>(read)) return;
    json message = std::move(std::get<json>(read));
    if (!message.is_object()) return;
    const bool answer =
        message.contains("id") && (message.contains("result") || message.contains("error"));
    if (!message.contains("method") && !answer) return;
    const auto id = message.find("id");
    if (in_progress_ >= kMaxConcurrentPodRequests) {
      if (id != message.end() && queue_.size() < kOutboundQueue) {
        const auto busy = jsonrpc::error_response(*id, jsonrpc::kOverloaded, kBusyMessage);
        queue_.push_back(
            {false, {.body = busy.dump(-1, ' ', false, json::error_handler_t::replace)}});
        pump();
      }
      return;
    }
    ++in_progress_;
    const std::uint64_t key = next_key_++;
    pending_.emplace(key, nullptr);
    McpRequest request{.context = owner_->request_context(),
                       .services = owner_->services(),
                       .config = owner_->config(),
                       .done =
                           [weak = weak_from_this(), key](std::optional<ReplyText> reply) {
                             if (auto self = weak.lock()) self->completed(key, std::move(reply));
                           },
                       .on_message =
                           [weak = weak_from_this()](ReplyText text) {
                             if (auto self = weak.lock()) self->relay(std::move(text));
                           }};
    request.context.mcp_session = mcp_session_;
    request.context.era = era_of(message);
    const auto tracer = owner_->tracer();
    const auto span =
        tracer ? start_request_span(*tracer, message, request.context, {.protocol = "websocket"})
               : nullptr;
    request.done = traced(std::move(request.done), span, nullptr);
    request.on_message = traced(std::move(request.on_message), span);
    Underway underway = traced(handle_mcp(message, std::move(request)), span);
    // `done` may already have run, in which case the entry is gone.
    if (const auto found = pending_.find(key); found != pending_.end())
      found->second = std::move(underway.abandon);
  }

  // Every 20 s: end the socket if the pod has been silent past the idle limit, else ping
  // (skipped when the queue is full).
  void schedule_ping() {
    ping_timer_.expires_after(owner_->timings().ping_interval);
    ping_timer_.async_wait([weak = weak_from_this()](const boost::system::error_code& error) {
      auto self = weak.lock();
      if (error || !self || self->ended_) return;
      if (Clock::now() - self->last_heard_ > self->owner_->timings().idle_limit) {
        self->end();
        return;
      }
      if (self->queue_.size() < kOutboundQueue) {
        self->queue_.push_back({true, {}});
        self->pump();
      }
      self->schedule_ping();
    });
  }

  void pump() {
    if (writing_ || ended_ || queue_.empty()) return;
    writing_ = true;
    write_front();
  }

  // The write of queue_.front() finished.
  void wrote(const beast::error_code& error) {
    writing_ = false;
    if (ended_) return;
    if (error) return end();
    queue_.pop_front();
    promote_waiting();
    pump();
  }

  std::deque<Outbound> queue_;
  bool ended_ = false;

 private:
  // A reply for request `key` is ready (or there is none). Its permit is held until the
  // reply fits in the outbound queue.
  void completed(std::uint64_t key, std::optional<ReplyText> reply) {
    if (pending_.erase(key) == 0 || ended_) return;
    if (!reply) {
      --in_progress_;
      return;
    }
    waiting_.push_back(std::move(*reply));
    promote_waiting();
    pump();
  }

  // A message from the computer during one of the pod's calls. A pod far behind on reading
  // loses progress rather than growing the queue.
  void relay(ReplyText text) {
    if (ended_ || queue_.size() >= kOutboundQueue) return;
    queue_.push_back({false, std::move(text)});
    pump();
  }

  void promote_waiting() {
    while (!waiting_.empty() && queue_.size() < kOutboundQueue) {
      queue_.push_back({false, std::move(waiting_.front())});
      waiting_.pop_front();
      --in_progress_;
    }
  }

  std::shared_ptr<SocketOwner> owner_;
  // The MCP session of this socket's calls: it scopes the pod's cancellations and answers
  // to them, and ends with the socket, and with it every call it could name.
  const std::string mcp_session_ =
      "pod-socket-" + std::to_string(reinterpret_cast<std::uintptr_t>(this));
  net::steady_timer ping_timer_;
  Clock::time_point last_heard_ = Clock::now();
  bool writing_ = false;
  int in_progress_ = 0;  // permits taken
  std::uint64_t next_key_ = 1;
  std::map<std::uint64_t, std::function<void()>> pending_;  // requests being processed
  std::deque<ReplyText> waiting_;                           // replies waiting for room in the queue
};

template <typename Ws>
class SocketOver final : public Socket {
 public:
  static constexpr bool kTls = std::is_same_v<Ws, TlsWs>;

  template <typename... StreamArgs>
  SocketOver(net::io_context& io, std::shared_ptr<SocketOwner> owner,
             std::shared_ptr<ssl::context> tls, StreamArgs&&... stream_args)
      : Socket(io, std::move(owner)),
        tls_(std::move(tls)),
        ws_(std::forward<StreamArgs>(stream_args)...) {}

  Ws& ws() { return ws_; }
  ssl::context* tls() { return tls_.get(); }

  // Serves the upgraded socket until it ends; returns the pod's close code, or nothing for
  // a drop (read error, end of stream, oversized message, idle, or end()).
  net::awaitable<std::optional<int>> run() {
    const auto self = std::static_pointer_cast<SocketOver>(shared_from_this());
    ws_.control_callback([this](websocket::frame_type, beast::string_view) { heard(); });
    heard();
    schedule_ping();
    while (!ended_) {
      auto [error, bytes] = co_await ws_.async_read(buffer_, kAwait);
      if (error) break;
      heard();
      const std::string text = beast::buffers_to_string(buffer_.data());
      buffer_.consume(buffer_.size());
      on_message(text);
    }
    std::optional<int> code;
    if (const auto& reason = ws_.reason(); reason.code != websocket::close_code::none)
      code = reason.code;
    end();
    ws_.control_callback();
    co_return code;
  }

 private:
  void write_front() override {
    auto self = std::static_pointer_cast<SocketOver>(shared_from_this());
    if (queue_.front().ping) {
      ws_.async_ping({}, [self](const beast::error_code& error) { self->wrote(error); });
      return;
    }
    ws_.text(true);
    const auto& text = queue_.front().text;
    ws_.async_write(std::array{net::buffer(text.head), net::buffer(text.body)},
                    [self](const beast::error_code& error, std::size_t) { self->wrote(error); });
  }

  void close_transport() override {
    beast::error_code ignored;
    beast::get_lowest_layer(ws_).socket().shutdown(tcp::socket::shutdown_both, ignored);
    beast::get_lowest_layer(ws_).close();
  }

  std::shared_ptr<ssl::context> tls_;  // outlives the stream that uses it
  Ws ws_;
  beast::flat_buffer buffer_;
};

}  // namespace sb::supervisor::pod
