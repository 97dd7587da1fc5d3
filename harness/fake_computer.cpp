#include "harness/fake_computer.hpp"

#include <strings.h>
#include <atomic>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/websocket.hpp>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "base/asio_names.hpp"
#include "harness/outbox.hpp"

namespace harness {

using namespace sb::asio_names;
using json = nlohmann::json;

json tool_definition(const std::string& name) {
  return json{{"name", name},
              {"description", "the fake computer's " + name},
              {"inputSchema", {{"type", "object"}}}};
}

json default_tools() {
  return json::array(
      {tool_definition("echo"), tool_definition("slow"), tool_definition("secret_tool")});
}

namespace {

json echo_result(const json& params) {
  const json arguments =
      params.is_object() && params.contains("arguments") ? params["arguments"] : json::object();
  return json{{"content", json::array({{{"type", "text"}, {"text", arguments.dump()}}})},
              {"isError", false}};
}

}  // namespace

CallAction scripted_by_arguments(const json& params) {
  const json arguments =
      params.is_object() && params.contains("arguments") ? params["arguments"] : json::object();
  const std::string mode =
      arguments.is_object() && arguments.contains("mode") && arguments["mode"].is_string()
          ? arguments["mode"].get<std::string>()
          : "";
  if (mode == "hold") return CallAction::hold();
  if (mode == "delay") {
    return CallAction::echo(std::chrono::milliseconds(arguments.value("ms", 0)));
  }
  if (mode == "close") return CallAction::close(arguments.value("code", 1000));
  if (mode == "drop") return CallAction::drop();
  if (mode == "progress") {
    return CallAction::progress(std::chrono::milliseconds(arguments.value("every_ms", 1000)),
                                arguments.value("count", 3), arguments.value("then", "") == "hold");
  }
  if (mode == "error") return CallAction::error(arguments.value("code", -32000), "fake error");
  if (mode == "tool_error") {
    return CallAction::result(
        json{{"content", json::array({{{"type", "text"}, {"text", "tool failed"}}})},
             {"isError", true}});
  }
  return CallAction::echo();
}

std::optional<std::string> FakeComputer::Refusal::header(const std::string& name) const {
  for (const auto& [key, value] : headers) {
    if (key.size() == name.size() && ::strncasecmp(key.data(), name.data(), name.size()) == 0)
      return value;
  }
  return std::nullopt;
}

struct FakeComputer::Impl {
  net::io_context io;
  net::executor_work_guard<net::io_context::executor_type> work{io.get_executor()};
  websocket::stream<beast::tcp_stream> ws{io};
  beast::flat_buffer read_buffer;
  http::response<http::string_body> upgrade_response;
  Outbox<std::string> outbox;  // io thread only
  // Messages queued for the switchboard and not yet written: read by the test's thread.
  std::atomic<std::size_t> unwritten{0};
  bool closing = false;  // io thread only
  int port = 0;
  FakeComputerOptions options;
  std::thread thread;

  mutable std::mutex mutex;
  mutable std::condition_variable changed;
  std::optional<int> attach_status;  // guarded
  Refusal refusal;                   // guarded
  std::vector<json> frames;          // guarded
  std::vector<std::string> texts;    // guarded: the frames as they arrived
  bool initialized = false;          // guarded
  std::size_t pings = 0;             // guarded
  std::optional<CloseInfo> ended;    // guarded
  int local_port = 0;                // guarded

  template <typename Predicate>
  bool wait(Predicate predicate, std::chrono::milliseconds timeout) const {
    std::unique_lock lock(mutex);
    return changed.wait_for(lock, timeout, predicate);
  }

  void notify(std::function<void()> update) {
    {
      std::lock_guard lock(mutex);
      update();
    }
    changed.notify_all();
  }

  // ---- attach ----

  void start_attach() {
    beast::get_lowest_layer(ws).expires_after(std::chrono::seconds(10));
    const tcp::endpoint endpoint(net::ip::make_address("127.0.0.1"),
                                 static_cast<unsigned short>(port));
    beast::get_lowest_layer(ws).async_connect(endpoint, [this](beast::error_code error) {
      if (error) return attach_failed(error);
      beast::error_code ignored;
      const auto local = beast::get_lowest_layer(ws).socket().local_endpoint(ignored);
      notify([&] { local_port = local.port(); });
      beast::get_lowest_layer(ws).expires_never();
      ws.set_option(websocket::stream_base::timeout{std::chrono::seconds(10),
                                                    websocket::stream_base::none(), false});
      ws.set_option(websocket::stream_base::decorator([this](websocket::request_type& request) {
        if (!options.secret.empty())
          request.set(http::field::authorization, "Bearer " + options.secret);
        for (const auto& [name, value] : options.headers) request.insert(name, value);
      }));
      ws.read_message_max(64 * 1024 * 1024);
      ws.control_callback([this](websocket::frame_type kind, beast::string_view) {
        if (kind == websocket::frame_type::ping) notify([&] { ++pings; });
      });
      ws.async_handshake(upgrade_response, "127.0.0.1:" + std::to_string(port), "/vm/attach",
                         [this](beast::error_code error) { on_handshake(error); });
    });
  }

  void attach_failed(beast::error_code error) {
    notify([&] {
      attach_status = upgrade_response.result_int() ? int(upgrade_response.result_int()) : -1;
      refusal.status = *attach_status;
      refusal.body = upgrade_response.body().empty() ? error.message() : upgrade_response.body();
      for (const auto& field : upgrade_response) {
        refusal.headers.emplace_back(std::string(field.name_string()), std::string(field.value()));
      }
    });
  }

  void on_handshake(beast::error_code error) {
    if (error) return attach_failed(error);
    notify([&] { attach_status = 101; });
    read_next();
  }

  // ---- reading ----

  void read_next() {
    ws.async_read(read_buffer, [this](beast::error_code error, std::size_t) { on_read(error); });
  }

  void on_read(beast::error_code error) {
    if (error) {
      CloseInfo info;
      if (error == websocket::error::closed) {
        info.close_frame = true;
        info.code = static_cast<std::uint16_t>(ws.reason().code);
        info.reason = std::string(ws.reason().reason.c_str());
      }
      notify([&] {
        if (!ended) ended = info;
      });
      return;
    }
    const std::string text = beast::buffers_to_string(read_buffer.data());
    read_buffer.consume(read_buffer.size());
    json message = json::parse(text, nullptr, /*allow_exceptions=*/false);
    notify([&] {
      frames.push_back(message.is_discarded() ? json(text) : message);
      texts.push_back(text);
    });
    if (message.is_object()) handle(message);
    if (options.deaf_after_initialized && message.is_object() &&
        message.value("method", "") == "notifications/initialized")
      return;
    read_next();
  }

  void handle(const json& message) {
    const auto id = message.find("id");
    const auto method = message.find("method");
    if (id == message.end() || method == message.end() || !method->is_string()) return;
    const std::string name = method->get<std::string>();
    const json params = message.value("params", json::object());
    if (name == "initialize") {
      if (options.init == InitMode::kNever) return;
      if (options.init == InitMode::kError) {
        send_reply(*id, json{{"error", {{"code", -32603}, {"message", "refusing initialize"}}}});
        return;
      }
      json capabilities = options.more_capabilities;
      if (!capabilities.contains("tools")) capabilities["tools"] = json::object();
      if (options.offers_logging) capabilities["logging"] = json::object();
      send_reply(*id, json{{"result",
                            {{"protocolVersion", "2025-06-18"},
                             {"capabilities", std::move(capabilities)},
                             {"serverInfo", options.server_info}}}});
      notify([&] { initialized = true; });
      return;
    }
    if (name == "tools/list") {
      if (options.hold_tools_list) return;
      send_reply(*id,
                 options.tools_list_reply.value_or(json{{"result", {{"tools", options.tools}}}}));
      return;
    }
    if (name == "tools/call") {
      const CallAction action = options.on_call ? options.on_call(params) : CallAction::echo();
      perform(*id, params, action);
      return;
    }
    if (const auto reply = options.replies.find(name); reply != options.replies.end()) {
      send_reply(*id, reply->second);
      return;
    }
    send_reply(*id, json{{"error", {{"code", -32601}, {"message", "not served by the fake"}}}});
  }

  void perform(const json& id, const json& params, const CallAction& action) {
    if (action.kind == CallAction::Kind::kHold) return;
    if (action.kind == CallAction::Kind::kProgress) return progress_step(id, params, action, 1);
    auto act = [this, id, params, action] {
      switch (action.kind) {
        case CallAction::Kind::kEcho:
          return send_reply(id, json{{"result", echo_result(params)}});
        case CallAction::Kind::kReply:
          return send_reply(id, action.reply);
        case CallAction::Kind::kClose:
          return close_with(action.close_code);
        case CallAction::Kind::kDrop:
          return drop_now();
        case CallAction::Kind::kHold:
        case CallAction::Kind::kProgress:
          return;
      }
    };
    if (action.delay.count() <= 0) return act();
    auto timer = std::make_shared<net::steady_timer>(io, action.delay);
    timer->async_wait([timer, act](beast::error_code error) {
      if (!error) act();
    });
  }

  // Progress notification `step` of a kProgress call after `action.delay`, then the next
  // one, and after the last the answer (unless the action holds).
  void progress_step(const json& id, const json& params, const CallAction& action, int step) {
    auto timer = std::make_shared<net::steady_timer>(io, action.delay);
    timer->async_wait([this, timer, id, params, action, step](beast::error_code error) {
      if (error || closing) return;
      json token = nullptr;
      if (params.is_object() && params.contains("_meta") && params["_meta"].is_object() &&
          params["_meta"].contains("progressToken"))
        token = params["_meta"]["progressToken"];
      send_text(json{{"jsonrpc", "2.0"},
                     {"method", "notifications/progress"},
                     {"params",
                      {{"progressToken", token},
                       {"progress", step},
                       {"total", action.progress_count},
                       {"message", "step " + std::to_string(step)}}}}
                    .dump());
      if (step < action.progress_count) return progress_step(id, params, action, step + 1);
      if (!action.hold_after) send_reply(id, json{{"result", echo_result(params)}});
    });
  }

  // ---- writing ----

  void send_reply(const json& id, const json& reply_without_id) {
    send_text(reply_text(id, reply_without_id));
  }

  static std::string reply_text(const json& id, const json& reply_without_id) {
    json reply = reply_without_id;
    reply["id"] = id;
    reply["jsonrpc"] = "2.0";
    return reply.dump();
  }

  void send_text(std::string text) {
    ++unwritten;
    queue_counted(std::move(text));
  }

  // `text` is counted in `unwritten` already: by the test's thread, when the test sent it,
  // so that unwritten() counts it from the moment it was asked for.
  void queue_counted(std::string text) {
    if (outbox.ended()) {
      --unwritten;
      return;
    }
    if (outbox.push(std::move(text))) write_front();
  }

  void write_front() {
    ws.async_write(net::buffer(outbox.front()), [this](beast::error_code error, std::size_t) {
      --unwritten;
      if (outbox.written(!error)) write_front();
    });
  }

  void close_with(std::uint16_t code) {
    if (closing) return;
    closing = true;
    outbox.end();
    ws.async_close(websocket::close_reason(static_cast<websocket::close_code>(code), "fake closes"),
                   [](beast::error_code) {});
  }

  void drop_now() {
    closing = true;
    outbox.end();
    beast::error_code ignored;
    beast::get_lowest_layer(ws).socket().shutdown(tcp::socket::shutdown_both, ignored);
    beast::get_lowest_layer(ws).socket().close(ignored);
  }
};

FakeComputer::FakeComputer(int port, FakeComputerOptions options)
    : impl_(std::make_shared<Impl>()) {
  impl_->port = port;
  impl_->options = std::move(options);
  if (impl_->options.tools.is_null()) impl_->options.tools = default_tools();
  impl_->thread = std::thread([impl = impl_.get()] { impl->io.run(); });
}

FakeComputer::~FakeComputer() {
  Impl* impl = impl_.get();
  net::post(impl->io, [impl] {
    impl->drop_now();
    impl->work.reset();
    impl->io.stop();
  });
  impl->thread.join();
}

int FakeComputer::attach(std::chrono::milliseconds timeout) {
  Impl* impl = impl_.get();
  net::post(impl->io, [impl] { impl->start_attach(); });
  if (!impl->wait([impl] { return impl->attach_status.has_value(); }, timeout)) return 0;
  std::lock_guard lock(impl->mutex);
  return *impl->attach_status;
}

FakeComputer::Refusal FakeComputer::refusal() const {
  std::lock_guard lock(impl_->mutex);
  return impl_->refusal;
}

std::vector<json> FakeComputer::frames() const {
  std::lock_guard lock(impl_->mutex);
  return impl_->frames;
}

std::vector<std::string> FakeComputer::frame_texts() const {
  std::lock_guard lock(impl_->mutex);
  return impl_->texts;
}

std::vector<json> FakeComputer::requests(const std::string& method) const {
  std::vector<json> out;
  for (const auto& frame : frames()) {
    if (frame.is_object() && frame.contains("id") && frame.value("method", "") == method)
      out.push_back(frame);
  }
  return out;
}

bool FakeComputer::wait_for_requests(const std::string& method, std::size_t count,
                                     std::chrono::milliseconds timeout) const {
  const Impl* impl = impl_.get();
  return impl->wait(
      [&] {
        std::size_t seen = 0;
        for (const auto& frame : impl->frames) {
          if (frame.is_object() && frame.contains("id") && frame.value("method", "") == method)
            ++seen;
        }
        return seen >= count;
      },
      timeout);
}

json FakeComputer::wait_for_frame(std::function<bool(const json&)> predicate,
                                  std::chrono::milliseconds timeout) const {
  const Impl* impl = impl_.get();
  json found;
  impl->wait(
      [&] {
        for (const auto& frame : impl->frames) {
          if (predicate(frame)) {
            found = frame;
            return true;
          }
        }
        return false;
      },
      timeout);
  return found;
}

bool FakeComputer::wait_for_pings(std::size_t count, std::chrono::milliseconds timeout) const {
  const auto impl = impl_;
  return impl->wait([impl, count] { return impl->pings >= count; }, timeout);
}

bool FakeComputer::wait_initialized(std::chrono::milliseconds timeout) const {
  const Impl* impl = impl_.get();
  return impl->wait([impl] { return impl->initialized; }, timeout);
}

bool FakeComputer::closed() const {
  std::lock_guard lock(impl_->mutex);
  return impl_->ended.has_value();
}

std::optional<CloseInfo> FakeComputer::close_info() const {
  std::lock_guard lock(impl_->mutex);
  return impl_->ended;
}

std::optional<CloseInfo> FakeComputer::wait_closed(std::chrono::milliseconds timeout) const {
  const Impl* impl = impl_.get();
  impl->wait([impl] { return impl->ended.has_value(); }, timeout);
  return close_info();
}

void FakeComputer::answer(std::uint64_t id, json reply_without_id) {
  Impl* impl = impl_.get();
  ++impl->unwritten;
  net::post(impl->io, [impl, text = Impl::reply_text(json(id), reply_without_id)]() mutable {
    impl->queue_counted(std::move(text));
  });
}

void FakeComputer::answer_echo(const json& request) {
  answer(request.at("id").get<std::uint64_t>(),
         json{{"result", echo_result(request.value("params", json::object()))}});
}

void FakeComputer::send_text(std::string text) {
  Impl* impl = impl_.get();
  ++impl->unwritten;
  net::post(impl->io,
            [impl, text = std::move(text)]() mutable { impl->queue_counted(std::move(text)); });
}

void FakeComputer::send_first_fragment(std::string text) {
  Impl* impl = impl_.get();
  net::post(impl->io, [impl, text = std::make_shared<std::string>(std::move(text))] {
    impl->ws.async_write_some(false, net::buffer(*text), [text](beast::error_code, std::size_t) {});
  });
}

void FakeComputer::close(std::uint16_t code) {
  Impl* impl = impl_.get();
  net::post(impl->io, [impl, code] { impl->close_with(code); });
}

void FakeComputer::drop() {
  Impl* impl = impl_.get();
  net::post(impl->io, [impl] { impl->drop_now(); });
}

std::size_t FakeComputer::unwritten() const {
  return impl_->unwritten;
}

int FakeComputer::local_port() const {
  std::lock_guard lock(impl_->mutex);
  return impl_->local_port;
}

}  // namespace harness
