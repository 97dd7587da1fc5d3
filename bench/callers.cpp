#include "bench/callers.hpp"

#include <pthread.h>

#include <array>
#include <atomic>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/use_future.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/websocket.hpp>
#include <future>
#include <nlohmann/json.hpp>
#include <thread>

#include "base/asio_names.hpp"
#include "harness/http_client.hpp"
#include "harness/wait.hpp"

namespace sbbench {
namespace {

using namespace sb::asio_names;
using json = nlohmann::json;
using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

constexpr std::size_t kMaxResponseBytes = 64 * 1024 * 1024;
constexpr auto kSetupTimeout = 60s;

std::string nonce_of(int caller, std::uint64_t id) {
  return "c" + std::to_string(caller) + "-" + std::to_string(id);
}

// The caller's work before a call: the request, built the same way on both paths.
std::string request_body(int caller, std::uint64_t id, const CallSpec& spec) {
  const std::string progress =
      spec.progress ? R"(,"progress":)" + std::to_string(spec.progress) : std::string();
  const std::string meta = spec.progress
                               ? R"("_meta":{"progressToken":"p)" + std::to_string(id) + R"("},)"
                               : std::string();
  return R"({"jsonrpc":"2.0","id":)" + std::to_string(id) + R"(,"method":"tools/call","params":{)" +
         meta + R"("name":")" + (spec.result_bytes ? "screenshot" : "echo") +
         R"(","arguments":{"nonce":")" + nonce_of(caller, id) + R"(","bytes":)" +
         std::to_string(spec.result_bytes) + progress + "}}}";
}

std::string held_call_body(std::uint64_t id) {
  return R"({"jsonrpc":"2.0","id":)" + std::to_string(id) +
         R"(,"method":"tools/call","params":{"name":"echo","arguments":{"hold":true}}})";
}

std::string cancel_body(std::uint64_t id) {
  return R"({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":)" +
         std::to_string(id) + R"(,"reason":"bench"}})";
}

// Whether `text` is a notifications/progress for the progress token of call `id`.
bool is_progress_of(std::string_view text, std::uint64_t id) {
  const json message = json::parse(text, nullptr, false);
  return message.is_object() && message.value("method", "") == "notifications/progress" &&
         message.contains("params") && message["params"].is_object() &&
         message["params"].value("progressToken", json()) == json("p" + std::to_string(id));
}

// The caller's work after a call: is this the answer to that request? A small reply is
// parsed whole; a large one is checked in place (id, image length, its first and last
// bytes) so that the check costs the same small amount on both paths.
std::optional<std::string> check_reply(std::string_view body, int caller, std::uint64_t id,
                                       const CallSpec& spec) {
  auto excerpt = [&] { return std::string(body.substr(0, 160)); };
  if (spec.result_bytes == 0) {
    const json reply = json::parse(body, nullptr, false);
    if (!reply.is_object()) return "not a JSON object: " + excerpt();
    if (reply.value("id", json()) != json(id)) return "wrong id: " + excerpt();
    const auto result = reply.find("result");
    if (result == reply.end() || !result->is_object()) return "no result: " + excerpt();
    if (result->value("isError", true)) return "isError: " + excerpt();
    const auto content = result->find("content");
    if (content == result->end() || !content->is_array() || content->empty() ||
        !(*content)[0].is_object() || (*content)[0].value("text", "") != nonce_of(caller, id)) {
      return "wrong content: " + excerpt();
    }
    return std::nullopt;
  }
  const std::string head = R"({"id":)" + std::to_string(id) + ",";
  if (!body.starts_with(head)) return "wrong id: " + excerpt();
  const auto marker = body.find(R"("data":")");
  if (marker == std::string_view::npos) return "no image data: " + excerpt();
  const std::size_t start = marker + 8;
  const std::size_t length = spec.result_bytes;
  if (body.size() <= start + length || body[start + length] != '"' ||
      body.find('"', start) != start + length) {
    return "image data of the wrong length: " + excerpt();
  }
  const auto expected = image_data(length);
  const std::size_t probe = std::min<std::size_t>(64, length);
  if (body.compare(start, probe, *expected, 0, probe) != 0 ||
      body.compare(start + length - probe, probe, *expected, length - probe, probe) != 0) {
    return "image data differs";
  }
  if (!body.ends_with("}")) return "truncated reply";
  return std::nullopt;
}

class Caller {
 public:
  explicit Caller(int index) : index_(index) {}
  virtual ~Caller() = default;
  // One tools/call, checked: an error text when it failed.
  virtual net::awaitable<std::optional<std::string>> call(const CallSpec& spec) = 0;
  // A call the computer holds, under a fresh id stored in `id` before it is sent; done when
  // it is over for this caller (HTTP: answered -32800 once cancelled; WebSocket: written).
  virtual net::awaitable<std::optional<std::string>> hold(std::atomic<std::uint64_t>& id) = 0;
  // notifications/cancelled for call `id`; `sent` is when its write began.
  virtual net::awaitable<std::optional<std::string>> cancel(std::uint64_t id,
                                                            Clock::time_point& sent) = 0;
  // The connection is unusable (a transport error): stop calling on it.
  bool broken() const { return broken_; }
  // When the last call's response head was in (HTTP callers only; a WebSocket message
  // comes whole).
  std::optional<Clock::time_point> head_at() const { return head_at_; }
  // Closes the connection, so that what waits on it ends (on the callers' thread).
  virtual void abort() = 0;

 protected:
  std::optional<std::string> transport_error(const char* what, const beast::error_code& error) {
    broken_ = true;
    return std::string(what) + ": " + error.message();
  }
  int index_;
  std::uint64_t next_id_ = 1;
  bool broken_ = false;
  std::optional<Clock::time_point> head_at_;
};

class HttpCaller final : public Caller {
 public:
  // `fixed_reply`: every reply must be exactly this (a yardstick's); else the relay's check.
  HttpCaller(net::io_context& io, int index, int port, std::string target, const std::string& token,
             std::shared_ptr<const std::string> fixed_reply = nullptr)
      : Caller(index),
        stream_(io),
        port_(port),
        target_(std::move(target)),
        authorization_("Bearer " + token),
        host_("127.0.0.1:" + std::to_string(port)),
        fixed_reply_(std::move(fixed_reply)) {}

  net::awaitable<std::optional<std::string>> connect() {
    const auto [error] = co_await stream_.async_connect(
        tcp::endpoint(net::ip::address_v4::loopback(), static_cast<unsigned short>(port_)), kAwait);
    if (error) co_return transport_error("connect", error);
    stream_.socket().set_option(tcp::no_delay(true));
    co_return std::nullopt;
  }

  // A lean client, so that its own cost stays close to the direct caller's: no per-read
  // timer (Beast re-arms one per read when a deadline is set), Beast for the headers, then
  // the body read straight into storage kept from the last call (as the direct caller
  // keeps its read buffer; a fresh buffer would charge the caller's page faults to the
  // relay). The switchboard always sends Content-Length.
  net::awaitable<std::optional<std::string>> call(const CallSpec& spec) override {
    if (spec.progress) co_return co_await call_with_progress(spec);
    const std::uint64_t id = next_id_++;
    if (auto error = co_await post(request_body(index_, id, spec))) co_return error;
    http::response_parser<http::empty_body> parser;
    parser.body_limit(kMaxResponseBytes);  // the body is read below, not by the parser
    const auto [read_error, read] =
        co_await http::async_read_header(stream_, buffer_, parser, kAwait);
    if (read_error) co_return transport_error("HTTP read", read_error);
    head_at_ = Clock::now();
    const auto length = parser.content_length();
    if (!length || *length > kMaxResponseBytes) {
      broken_ = true;
      co_return "HTTP response without a usable Content-Length";
    }
    const std::size_t size = *length;
    if (size > capacity_) {
      storage_ = std::make_unique_for_overwrite<char[]>(size);
      capacity_ = size;
    }
    const std::size_t buffered = std::min(buffer_.size(), size);
    net::buffer_copy(net::buffer(storage_.get(), buffered), buffer_.data());
    buffer_.consume(buffered);
    if (buffered < size) {
      const auto [body_error, got] = co_await net::async_read(
          stream_.socket(), net::buffer(storage_.get() + buffered, size - buffered), kAwait);
      if (body_error) co_return transport_error("HTTP read", body_error);
    }
    const std::string_view body(storage_.get(), size);
    const int status = parser.get().result_int();
    if (status != 200)
      co_return "HTTP " + std::to_string(status) + ": " + std::string(body.substr(0, 160));
    if (fixed_reply_) {
      if (body == *fixed_reply_) co_return std::nullopt;
      co_return "not the fixed reply: " + std::string(body.substr(0, 160));
    }
    co_return check_reply(body, index_, id, spec);
  }

  net::awaitable<std::optional<std::string>> hold(std::atomic<std::uint64_t>& id) override {
    id = next_id_++;
    http::response<http::string_body> response;
    if (auto error = co_await exchange(held_call_body(id), response)) co_return error;
    const json reply = json::parse(response.body(), nullptr, false);
    if (response.result_int() != 200 || !reply.is_object() || !reply.contains("error") ||
        reply["error"].value("code", 0) != -32800)
      co_return "a cancelled call was answered otherwise: " + response.body().substr(0, 160);
    co_return std::nullopt;
  }

  net::awaitable<std::optional<std::string>> cancel(std::uint64_t id,
                                                    Clock::time_point& sent) override {
    sent = Clock::now();
    http::response<http::string_body> response;
    if (auto error = co_await exchange(cancel_body(id), response)) co_return error;
    if (response.result_int() != 202)
      co_return "a cancel was answered " + std::to_string(response.result_int());
    co_return std::nullopt;
  }

  void abort() override {
    broken_ = true;
    beast::error_code ignored;
    stream_.socket().close(ignored);
  }

 private:
  // The relay's request with `body`, a JSON-RPC message, as every caller sends it.
  net::awaitable<std::optional<std::string>> post(std::string body) {
    http::request<http::string_body> request{http::verb::post, target_, 11};
    request.set(http::field::host, host_);
    request.set(http::field::authorization, authorization_);
    request.set(http::field::content_type, "application/json");
    request.set(http::field::accept, "application/json, text/event-stream");
    request.keep_alive(true);
    request.body() = std::move(body);
    request.prepare_payload();
    const auto [error, written] = co_await http::async_write(stream_, request, kAwait);
    if (error) co_return transport_error("HTTP write", error);
    co_return std::nullopt;
  }

  // One POST of `body` and its whole response, however it is framed (a stream is chunked).
  net::awaitable<std::optional<std::string>> exchange(std::string body,
                                                      http::response<http::string_body>& out) {
    if (auto error = co_await post(std::move(body))) co_return error;
    http::response_parser<http::string_body> parser;
    parser.body_limit(kMaxResponseBytes);
    const auto [read_error, read] = co_await http::async_read(stream_, buffer_, parser, kAwait);
    if (read_error) co_return transport_error("HTTP read", read_error);
    out = parser.release();
    co_return std::nullopt;
  }

  // The reply becomes an event stream: `spec.progress` progress events with the caller's
  // own token, then the response as the last event.
  net::awaitable<std::optional<std::string>> call_with_progress(const CallSpec& spec) {
    const std::uint64_t id = next_id_++;
    http::response<http::string_body> response;
    if (auto error = co_await exchange(request_body(index_, id, spec), response)) co_return error;
    if (response.result_int() != 200)
      co_return "HTTP " + std::to_string(response.result_int()) + ": " +
          response.body().substr(0, 160);
    if (!response[http::field::content_type].starts_with("text/event-stream"))
      co_return "no event stream: " + response.body().substr(0, 160);
    const auto events = harness::parse_sse(response.body());
    if (events.size() != static_cast<std::size_t>(spec.progress) + 1)
      co_return std::to_string(events.size()) + " events: " + response.body().substr(0, 160);
    for (std::size_t i = 0; i + 1 < events.size(); ++i) {
      if (!is_progress_of(events[i].data, id))
        co_return "not this call's progress: " + events[i].data;
    }
    co_return check_reply(events.back().data, index_, id, spec);
  }

  beast::tcp_stream stream_;
  beast::flat_buffer buffer_;
  std::unique_ptr<char[]> storage_;  // the body, kept between calls: reused, never zeroed
  std::size_t capacity_ = 0;
  int port_;
  std::string target_;
  std::string authorization_;
  std::string host_;
  std::shared_ptr<const std::string> fixed_reply_;
};

class DirectCaller final : public Caller {
 public:
  DirectCaller(int index, tcp::socket socket) : Caller(index), ws_(std::move(socket)) {}

  // The fake computer dialled us: accept its upgrade, then do what the switchboard does
  // first (initialize, expect a result, notifications/initialized). Not timed.
  net::awaitable<std::optional<std::string>> accept() {
    beast::get_lowest_layer(ws_).socket().set_option(tcp::no_delay(true));
    ws_.read_message_max(kMaxResponseBytes);
    ws_.text(true);
    const auto [accept_error] = co_await ws_.async_accept(kAwait);
    if (accept_error) co_return transport_error("WebSocket accept", accept_error);
    const std::string initialize =
        R"({"id":1,"jsonrpc":"2.0","method":"initialize","params":{"capabilities":{},)"
        R"("clientInfo":{"name":"switchboard-bench","version":"1"},)"
        R"("protocolVersion":"2025-06-18"}})";
    if (const auto [error, n] = co_await ws_.async_write(net::buffer(initialize), kAwait); error)
      co_return transport_error("WebSocket write", error);
    if (const auto [error, n] = co_await ws_.async_read(buffer_, kAwait); error)
      co_return transport_error("WebSocket read", error);
    const auto reply = json::parse(beast::buffers_to_string(buffer_.cdata()), nullptr, false);
    buffer_.consume(buffer_.size());
    if (!reply.is_object() || !reply.contains("result")) co_return "initialize was refused";
    const std::string initialized = R"({"jsonrpc":"2.0","method":"notifications/initialized"})";
    if (const auto [error, n] = co_await ws_.async_write(net::buffer(initialized), kAwait); error)
      co_return transport_error("WebSocket write", error);
    next_id_ = 2;
    co_return std::nullopt;
  }

  net::awaitable<std::optional<std::string>> call(const CallSpec& spec) override {
    const std::uint64_t id = next_id_++;
    const std::string body = request_body(index_, id, spec);
    if (const auto [error, n] = co_await ws_.async_write(net::buffer(body), kAwait); error)
      co_return transport_error("WebSocket write", error);
    for (int i = 0; i < spec.progress; ++i) {
      if (const auto [error, n] = co_await ws_.async_read(buffer_, kAwait); error)
        co_return transport_error("WebSocket read", error);
      const auto data = buffer_.cdata();
      const bool progress =
          is_progress_of(std::string_view(static_cast<const char*>(data.data()), data.size()), id);
      buffer_.consume(buffer_.size());
      if (!progress) co_return "not this call's progress";
    }
    if (const auto [error, n] = co_await ws_.async_read(buffer_, kAwait); error)
      co_return transport_error("WebSocket read", error);
    const auto data = buffer_.cdata();
    auto verdict = check_reply(std::string_view(static_cast<const char*>(data.data()), data.size()),
                               index_, id, spec);
    buffer_.consume(buffer_.size());
    co_return verdict;
  }

  net::awaitable<std::optional<std::string>> hold(std::atomic<std::uint64_t>& id) override {
    id = next_id_++;
    const std::string body = held_call_body(id);
    if (const auto [error, n] = co_await ws_.async_write(net::buffer(body), kAwait); error)
      co_return transport_error("WebSocket write", error);
    co_return std::nullopt;
  }

  net::awaitable<std::optional<std::string>> cancel(std::uint64_t id,
                                                    Clock::time_point& sent) override {
    const std::string body = cancel_body(id);
    sent = Clock::now();
    if (const auto [error, n] = co_await ws_.async_write(net::buffer(body), kAwait); error)
      co_return transport_error("WebSocket write", error);
    co_return std::nullopt;
  }

  void abort() override {
    broken_ = true;
    beast::error_code ignored;
    beast::get_lowest_layer(ws_).socket().close(ignored);
  }

 private:
  websocket::stream<beast::tcp_stream> ws_;
  beast::flat_buffer buffer_;
};

// Shared by the call loops of one concurrent run (all on the callers' thread).
struct RunState {
  explicit RunState(net::any_io_executor executor) : all_done(executor) {}
  Tally tally;
  long started = 0;
  long max_calls = 0;
  int running = 0;
  Clock::time_point begin;
  Clock::time_point end;
  net::steady_timer all_done;
};

void record(Tally& tally, const std::optional<std::string>& error) {
  if (!error) {
    ++tally.ok;
    return;
  }
  ++tally.failed;
  if (tally.first_error.empty()) tally.first_error = *error;
}

}  // namespace

struct CallerPool::Impl {
  net::io_context io{1};
  net::executor_work_guard<net::io_context::executor_type> work{io.get_executor()};
  std::thread thread;
  std::array<std::vector<std::unique_ptr<Caller>>, 6> by_path;  // indexed by Path
  int next_index = 0;
  long relayed_ok = 0;  // only the thread that asks for runs and waits for them touches it

  Tally counted(Path path, Tally tally) {
    if (path == Path::kRelay) relayed_ok += tally.ok;
    return tally;
  }

  std::vector<std::unique_ptr<Caller>>& callers(Path path) {
    return by_path.at(static_cast<std::size_t>(path));
  }

  // Replaces the callers of `path` with `count` HTTP callers made by `make(i)`.
  template <typename Make>
  std::optional<std::string> connect_http(Path path, int count, Make make) {
    on_thread([&] { callers(path).clear(); });
    auto future = net::co_spawn(
        io,
        [&]() -> net::awaitable<std::optional<std::string>> {
          for (int i = 0; i < count; ++i) {
            std::unique_ptr<HttpCaller> caller = make(i);
            if (auto error = co_await caller->connect()) co_return error;
            callers(path).push_back(std::move(caller));
          }
          co_return std::nullopt;
        },
        net::use_future);
    if (future.wait_for(kSetupTimeout) != std::future_status::ready)
      return "connecting the HTTP callers timed out";
    return future.get();
  }

  // Runs `f` on the callers' thread and waits for it.
  template <typename F>
  void on_thread(F f) {
    std::promise<void> done;
    net::post(io, [&] {
      f();
      done.set_value();
    });
    done.get_future().wait();
  }
};

CallerPool::CallerPool() : impl_(std::make_unique<Impl>()) {
  impl_->thread = std::thread([impl = impl_.get()] { impl->io.run(); });
  ::pthread_setname_np(impl_->thread.native_handle(), "sb-callers");  // for perf and top
}

CallerPool::~CallerPool() {
  impl_->on_thread([&] {
    for (auto& callers : impl_->by_path) callers.clear();
  });
  impl_->work.reset();
  impl_->io.stop();
  impl_->thread.join();
}

std::optional<std::string> CallerPool::connect_relay(int port, const std::string& token,
                                                     const std::vector<std::string>& computers,
                                                     int count, Path path) {
  return impl_->connect_http(path, count, [&](int i) {
    const auto& computer = computers[static_cast<std::size_t>(i) % computers.size()];
    return std::make_unique<HttpCaller>(impl_->io, impl_->next_index++, port, "/mcp/" + computer,
                                        token);
  });
}

std::optional<std::string> CallerPool::connect_fixed(Path path, int port, std::string reply,
                                                     int count) {
  const auto expected = std::make_shared<const std::string>(std::move(reply));
  return impl_->connect_http(path, count, [&](int) {
    return std::make_unique<HttpCaller>(impl_->io, impl_->next_index++, port, "/mcp/c0",
                                        "yardstick", expected);
  });
}

std::optional<std::string> CallerPool::connect_direct(ComputerFleet& fleet, int count) {
  impl_->on_thread([&] { impl_->callers(Path::kDirect).clear(); });
  tcp::acceptor acceptor(impl_->io, tcp::endpoint(net::ip::address_v4::loopback(), 0));
  const int port = acceptor.local_endpoint().port();
  auto future = net::co_spawn(
      impl_->io,
      [&]() -> net::awaitable<std::optional<std::string>> {
        for (int i = 0; i < count; ++i) {
          auto [error, socket] = co_await acceptor.async_accept(kAwait);
          if (error) co_return "accept: " + error.message();
          auto caller = std::make_unique<DirectCaller>(impl_->next_index++, std::move(socket));
          if (auto failure = co_await caller->accept()) co_return failure;
          impl_->callers(Path::kDirect).push_back(std::move(caller));
        }
        co_return std::nullopt;
      },
      net::use_future);
  for (int i = 0; i < count; ++i) fleet.dial(port, "direct", "/direct");
  if (future.wait_for(kSetupTimeout) != std::future_status::ready) {
    impl_->on_thread([&] { acceptor.close(); });
    future.wait();
    return "the fake computers did not dial the direct callers in time";
  }
  auto result = future.get();
  impl_->on_thread([&] { acceptor.close(); });
  return result;
}

Tally CallerPool::sequential(Path path, const CallSpec& spec, int calls) {
  auto& callers = impl_->callers(path);
  if (callers.empty()) return Tally{.failed = calls, .first_error = "no caller connected"};
  Caller& caller = *callers.front();
  auto future = net::co_spawn(
      impl_->io,
      [&]() -> net::awaitable<Tally> {
        Tally tally;
        tally.latencies_ns.reserve(static_cast<std::size_t>(calls));
        const auto begin = Clock::now();
        for (int i = 0; i < calls && !caller.broken(); ++i) {
          const auto start = Clock::now();
          const auto error = co_await caller.call(spec);
          const auto stop = Clock::now();
          record(tally, error);
          if (!error) {
            tally.latencies_ns.push_back(
                std::chrono::duration_cast<std::chrono::nanoseconds>(stop - start).count());
            if (const auto head = caller.head_at(); head && *head >= start) {
              tally.head_latencies_ns.push_back(
                  std::chrono::duration_cast<std::chrono::nanoseconds>(*head - start).count());
            }
          }
        }
        tally.seconds = std::chrono::duration<double>(Clock::now() - begin).count();
        if (caller.broken()) {
          tally.failed += calls - tally.ok - tally.failed;
          if (tally.first_error.empty()) tally.first_error = "the connection broke earlier";
        }
        co_return tally;
      },
      net::use_future);
  return impl_->counted(path, future.get());
}

Tally CallerPool::concurrent(Path path, const CallSpec& spec, int count,
                             std::chrono::milliseconds duration, long max_calls) {
  auto& callers = impl_->callers(path);
  if (static_cast<int>(callers.size()) < count)
    return Tally{.failed = 1, .first_error = "not enough callers connected"};
  auto future = net::co_spawn(
      impl_->io,
      [&]() -> net::awaitable<Tally> {
        auto state = std::make_shared<RunState>(impl_->io.get_executor());
        state->max_calls = max_calls;
        state->running = count;
        state->all_done.expires_at(Clock::time_point::max());
        state->begin = Clock::now();
        const auto deadline = state->begin + duration;
        for (int i = 0; i < count; ++i) {
          Caller& caller = *callers[static_cast<std::size_t>(i)];
          net::co_spawn(
              impl_->io,
              [&caller, spec, deadline, state]() -> net::awaitable<void> {
                while (Clock::now() < deadline && state->started < state->max_calls &&
                       !caller.broken()) {
                  ++state->started;
                  record(state->tally, co_await caller.call(spec));
                }
              },
              [state](std::exception_ptr) {
                if (--state->running > 0) return;
                state->end = Clock::now();
                state->all_done.cancel();
              });
        }
        if (state->running > 0) co_await state->all_done.async_wait(kAwait);
        state->tally.seconds = std::chrono::duration<double>(state->end - state->begin).count();
        co_return state->tally;
      },
      net::use_future);
  return impl_->counted(path, future.get());
}

Tally CallerPool::cancels(Path path, const ComputerFleet& fleet, int samples) {
  auto& callers = impl_->callers(path);
  const std::size_t needed = path == Path::kRelay ? 2 : 1;
  if (callers.size() < needed)
    return Tally{.failed = samples, .first_error = "not enough callers connected"};
  Caller& holder = *callers.front();
  Caller& canceller = *callers[needed - 1];
  // Polled from this thread, so that the callers' and the computers' threads do nothing
  // but their own work while a cancel travels.
  auto wait_until = [](auto condition) { return harness::eventually(condition, 10s, 100us); };
  using Outcome = std::future<std::optional<std::string>>;
  // What an exchange came to, waited for with a bound; one that never ends has its
  // connections closed, so that nothing it refers to is left behind.
  auto settle = [&](Outcome& outcome, const std::string& never) -> std::optional<std::string> {
    if (!outcome.valid()) return std::nullopt;
    if (outcome.wait_for(10s) == std::future_status::ready) return outcome.get();
    impl_->on_thread([&] {
      holder.abort();
      canceller.abort();
    });
    outcome.wait();
    return never;
  };
  Tally tally;
  const auto begin = Clock::now();
  for (int i = 0; i < samples && !holder.broken() && !canceller.broken(); ++i) {
    const int held_before = fleet.held();
    const int cancels_before = fleet.cancels();
    std::atomic<std::uint64_t> id{0};
    Clock::time_point sent;
    Outcome held = net::co_spawn(impl_->io, holder.hold(id), net::use_future);
    Outcome cancel;
    std::optional<std::string> error;
    if (!wait_until([&] { return fleet.held() > held_before; })) {
      error = "the computer never received the call to hold";
    } else {
      // One WebSocket takes one write at a time: there the cancel waits for the call's.
      if (&holder == &canceller) error = settle(held, "the held call was never sent");
      if (!error) {
        cancel = net::co_spawn(impl_->io, canceller.cancel(id.load(), sent), net::use_future);
        error = settle(cancel, "the cancel was never answered");
      }
      if (!error && !wait_until([&] { return fleet.cancels() > cancels_before; }))
        error = "the computer never received the cancel";
    }
    const auto held_error = settle(held, "the cancelled call was never answered");
    if (!error) error = held_error;
    record(tally, error);
    if (error) break;
    tally.latencies_ns.push_back(
        std::chrono::duration_cast<std::chrono::nanoseconds>(fleet.last_cancel() - sent).count());
  }
  tally.seconds = std::chrono::duration<double>(Clock::now() - begin).count();
  return tally;
}

long CallerPool::relayed_ok() const {
  return impl_->relayed_ok;
}

// ---- HttpPoller ----

struct HttpPoller::Impl {
  net::io_context io;
  std::optional<beast::tcp_stream> stream;
  beast::flat_buffer buffer;
  int port = 0;
  std::string authorization;
};

HttpPoller::HttpPoller(int port, std::string token) : impl_(std::make_unique<Impl>()) {
  impl_->port = port;
  impl_->authorization = "Bearer " + token;
}

HttpPoller::~HttpPoller() = default;

std::optional<std::pair<int, std::string>> HttpPoller::get(const std::string& target) {
  return exchange(static_cast<int>(http::verb::get), target, {});
}

std::optional<std::pair<int, std::string>> HttpPoller::post(const std::string& target,
                                                            std::string body) {
  return exchange(static_cast<int>(http::verb::post), target, std::move(body));
}

std::optional<std::pair<int, std::string>> HttpPoller::exchange(int verb, const std::string& target,
                                                                std::string body) {
  beast::error_code error;
  if (!impl_->stream) {
    impl_->stream.emplace(impl_->io);
    impl_->buffer.clear();
    impl_->stream->connect(
        tcp::endpoint(net::ip::address_v4::loopback(), static_cast<unsigned short>(impl_->port)),
        error);
    if (error) {
      impl_->stream.reset();
      return std::nullopt;
    }
  }
  http::request<http::string_body> request{static_cast<http::verb>(verb), target, 11};
  request.set(http::field::host, "127.0.0.1:" + std::to_string(impl_->port));
  request.set(http::field::authorization, impl_->authorization);
  if (!body.empty()) {
    request.set(http::field::content_type, "application/json");
    request.set(http::field::accept, "application/json, text/event-stream");
    request.body() = std::move(body);
    request.prepare_payload();
  }
  request.keep_alive(true);
  http::write(*impl_->stream, request, error);
  http::response<http::string_body> response;
  if (!error) http::read(*impl_->stream, impl_->buffer, response, error);
  if (error || !response.keep_alive()) impl_->stream.reset();
  if (error) return std::nullopt;
  return std::make_pair(static_cast<int>(response.result_int()), std::move(response.body()));
}

}  // namespace sbbench
