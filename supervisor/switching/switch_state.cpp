#include "supervisor/switching/switch_state.hpp"

#include <limits>
#include <set>

#include "ipc/meta_codec.hpp"

namespace sb::supervisor {
namespace {

using ipc::MetaReader;
using ipc::MetaWriter;
using ipc::steady_time;
using ipc::steady_time_number;

// Counts are read before what they count and bounded, and a read past the end stops the
// reading: a forged count cannot make the reader loop for ever.
constexpr std::uint64_t kMaxEntries = 1'000'000;

// Reads a state field by field; the first field out of bounds fails the whole state.
class StateReader {
 public:
  explicit StateReader(std::string_view bytes) : in_(bytes) {}

  std::uint64_t number() { return in_.number(); }
  std::string text(std::size_t bound = kMaxCarriedText) {
    const std::string_view value = in_.text();
    if (value.size() > bound) fail("a text over its bound");
    return std::string(value);
  }
  std::string bytes() { return std::string(in_.text()); }
  bool flag() {
    const auto value = ipc::flag(in_.byte());
    if (!value) fail("a flag out of range");
    return value.value_or(false);
  }
  SteadyTime time() {
    const auto value = steady_time(in_.number());
    if (!value) fail("a time out of range");
    return value.value_or(SteadyTime{});
  }
  std::uint64_t count() {
    const std::uint64_t value = in_.number();
    if (value > kMaxEntries) fail("a count over its bound");
    return failed() ? 0 : value;
  }
  void fail(std::string why) {
    if (why_.empty()) why_ = std::move(why);
  }
  bool failed() const { return !why_.empty() || !in_.ok(); }
  bool complete() const { return in_.complete(); }
  std::string why() const { return why_.empty() ? "a state cut short" : why_; }

 private:
  MetaReader in_;
  std::string why_;
};

CarriedConnection read_connection(StateReader& in) {
  CarriedConnection connection{.socket = in.text(), .bytes = in.bytes()};
  if (in.flag()) {
    connection.call =
        CarriedCall{.call_id = in.number(), .started = in.time(), .streaming = in.flag()};
    if (connection.call->call_id == 0) in.fail("a carried call without its id");
  }
  return connection;
}

CarriedSession read_session(StateReader& in) {
  CarriedSession session{.verifier = in.text(),
                         .computer = in.text(),
                         .generation = in.number(),
                         .peer = in.text(),
                         .attached_at_ms = static_cast<std::int64_t>(in.number()),
                         .socket = in.text(),
                         .record = in.bytes()};
  if (session.generation == 0) in.fail("a session without its generation");
  return session;
}

// Every descriptor named once: two entries sharing one would hand one socket to two owners.
bool names_unique(const SwitchState& state) {
  std::set<std::string> names;
  if (!state.requester.empty()) names.insert(state.requester);
  for (const auto& session : state.sessions) {
    if (session.socket.empty() || !names.insert(session.socket).second) return false;
  }
  for (const auto& connection : state.connections) {
    if (connection.socket.empty() || !names.insert(connection.socket).second) return false;
  }
  return true;
}

}  // namespace

std::string encode(const SwitchState& state) {
  MetaWriter out;
  out.number(kSwitchStateVersion)
      .text(state.build)
      .number(steady_time_number(state.started))
      .number(state.switches)
      .number(state.sessions_resumed)
      .number(state.next_call_id)
      .text(state.requester);
  out.number(state.generations.size());
  for (const auto& entry : state.generations) out.text(entry.verifier).number(entry.generation);
  out.number(state.sessions.size());
  for (const auto& session : state.sessions) {
    out.text(session.verifier)
        .text(session.computer)
        .number(session.generation)
        .text(session.peer)
        .number(static_cast<std::uint64_t>(session.attached_at_ms))
        .text(session.socket)
        .text(session.record);
  }
  out.number(state.lost.size());
  for (const auto& lost : state.lost) out.text(lost.computer).text(lost.why);
  out.number(state.connections.size());
  for (const auto& connection : state.connections) {
    out.text(connection.socket).text(connection.bytes).byte(connection.call ? 1 : 0);
    if (connection.call) {
      out.number(connection.call->call_id)
          .number(steady_time_number(connection.call->started))
          .byte(connection.call->streaming ? 1 : 0);
    }
  }
  out.number(state.tasks.size());
  for (const auto& task : state.tasks) {
    out.text(task.computer)
        .number(static_cast<std::uint64_t>(task.attached_at_ms))
        .text(task.task_id)
        .text(task.caller);
  }
  out.number(state.routes.size());
  for (const auto& route : state.routes)
    out.text(route.routed_id).number(route.call_id).number(route.key);
  out.number(state.next_routed);
  // Last, and only when there are some, so that a state without them is written as an
  // earlier build wrote it, and an earlier build's state still reads.
  if (!state.subscriptions.empty()) out.number(state.subscriptions.size());
  for (const auto& subscription : state.subscriptions) {
    out.text(subscription.computer)
        .number(static_cast<std::uint64_t>(subscription.attached_at_ms))
        .text(subscription.uri)
        .text(subscription.caller)
        .text(subscription.mcp_session);
  }
  return out.take();
}

std::optional<SwitchState> decode_switch_state(std::string_view bytes, std::string& why) {
  if (bytes.size() > kMaxSwitchStateBytes) {
    why = "a state over its size bound";
    return std::nullopt;
  }
  StateReader in(bytes);
  SwitchState state;
  if (in.number() != kSwitchStateVersion) in.fail("a state of another version");
  state.build = in.text();
  state.started = in.time();
  state.switches = in.number();
  state.sessions_resumed = in.number();
  state.next_call_id = in.number();
  state.requester = in.text();
  for (auto n = in.count(); n > 0 && !in.failed(); --n)
    state.generations.push_back({.verifier = in.text(), .generation = in.number()});
  for (auto n = in.count(); n > 0 && !in.failed(); --n) state.sessions.push_back(read_session(in));
  for (auto n = in.count(); n > 0 && !in.failed(); --n)
    state.lost.push_back({.computer = in.text(), .why = in.text()});
  for (auto n = in.count(); n > 0 && !in.failed(); --n)
    state.connections.push_back(read_connection(in));
  for (auto n = in.count(); n > 0 && !in.failed(); --n) {
    state.tasks.push_back({.computer = in.text(),
                           .attached_at_ms = static_cast<std::int64_t>(in.number()),
                           .task_id = in.text(),
                           .caller = in.text()});
  }
  for (auto n = in.count(); n > 0 && !in.failed(); --n) {
    state.routes.push_back({.routed_id = in.text(), .call_id = in.number(), .key = in.number()});
  }
  state.next_routed = in.number();
  if (!in.failed() && !in.complete()) {
    const auto subscriptions = in.count();
    // Written only when there are some: an empty section is not what an encoder wrote.
    if (subscriptions == 0) in.fail("an empty subscription section");
    for (auto n = subscriptions; n > 0 && !in.failed(); --n) {
      state.subscriptions.push_back({.computer = in.text(),
                                     .attached_at_ms = static_cast<std::int64_t>(in.number()),
                                     .uri = in.text(),
                                     .caller = in.text(),
                                     .mcp_session = in.text()});
    }
  }
  if (!in.failed() && !in.complete()) in.fail("a state cut short or with bytes after it");
  if (!in.failed() && state.next_call_id == 0) in.fail("a call counter at zero");
  if (!in.failed() && !names_unique(state)) in.fail("a descriptor named twice or not at all");
  if (in.failed()) {
    why = in.why();
    return std::nullopt;
  }
  return state;
}

}  // namespace sb::supervisor
