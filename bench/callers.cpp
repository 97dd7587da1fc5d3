#include "bench/callers.hpp"

#include <pthread.h>

#include <array>
#include <atomic>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_future.hpp>
#include <future>
#include <thread>

#include "bench/caller.hpp"
#include "bench/direct_caller.hpp"
#include "bench/http_caller.hpp"
#include "harness/wait.hpp"

namespace sbbench {
namespace {

using namespace std::chrono_literals;

constexpr auto kSetupTimeout = 60s;

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
  std::array<std::vector<std::unique_ptr<Caller>>, 8> by_path;  // indexed by Path
  int next_index = 0;
  long relayed_ok = 0;  // only the thread that asks for runs and waits for them touches it

  Tally counted(Path path, Tally tally) {
    if (path == Path::kRelay || path == Path::kRelay2026 || path == Path::kRelayJwt)
      relayed_ok += tally.ok;
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
                                        token, nullptr, path == Path::kRelay2026);
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
        state->tally.longest_gaps_ns.assign(static_cast<std::size_t>(count), 0);
        const auto deadline = state->begin + duration;
        for (int i = 0; i < count; ++i) {
          Caller& caller = *callers[static_cast<std::size_t>(i)];
          net::co_spawn(
              impl_->io,
              [&caller, spec, deadline, state, i]() -> net::awaitable<void> {
                auto last_reply = state->begin;
                auto& longest = state->tally.longest_gaps_ns[static_cast<std::size_t>(i)];
                while (Clock::now() < deadline && state->started < state->max_calls &&
                       !caller.broken()) {
                  ++state->started;
                  record(state->tally, co_await caller.call(spec));
                  const auto now = Clock::now();
                  longest = std::max<std::int64_t>(
                      longest,
                      std::chrono::duration_cast<std::chrono::nanoseconds>(now - last_reply)
                          .count());
                  last_reply = now;
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

}  // namespace sbbench
