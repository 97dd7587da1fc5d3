// What crosses a switch beside the descriptors (docs/architecture.md, "Switching"): the
// state round-trips, and a state that is not exactly one of this version is refused with
// its reason; so are the descriptors of the environment that do not agree.
#include "supervisor/switching/switch_state.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>

#include "supervisor/switching/descriptors.hpp"

namespace sb::supervisor {
namespace {

SwitchState a_state() {
  const SteadyTime now = std::chrono::steady_clock::now();
  return SwitchState{
      .build = "0.1.0+abc",
      .started = now,
      .switches = 4,
      .sessions_resumed = 7,
      .next_call_id = 90,
      .generations = {{.verifier = "sha256:aa", .generation = 3}},
      .sessions = {{.verifier = "sha256:aa",
                    .computer = "alpha",
                    .generation = 3,
                    .peer = "10.0.0.1:5",
                    .attached_at_ms = 1'700'000'000'000,
                    .socket = "computer-alpha-3",
                    .record = std::string("\0record", 7)}},
      .lost = {{.computer = "beta", .why = "not at a message boundary in time"}},
      .connections = {{.socket = "caller-1", .bytes = "GET / HTTP/1.1\r\n\r\n"},
                      {.socket = "caller-2",
                       .bytes = "POST /mcp HTTP/1.1\r\n",
                       .call = CarriedCall{.call_id = 89, .started = now, .streaming = true}}},
      .tasks = {{.computer = "alpha", .attached_at_ms = 5, .task_id = "t-1", .caller = "owner"}},
      .routes = {{.routed_id = R"("sb-4")", .call_id = 89, .key = 2}},
      .next_routed = 5,
      .subscriptions = {{.computer = "alpha",
                         .attached_at_ms = 5,
                         .uri = "file:///a.md",
                         .caller = "owner",
                         .mcp_session = "s-1"}},
      .requester = "requester"};
}

std::string why_refused(const std::string& bytes) {
  std::string why;
  EXPECT_FALSE(decode_switch_state(bytes, why));
  return why;
}

TEST(SwitchState, RoundTripsEveryField) {
  const SwitchState state = a_state();
  std::string why;
  const auto back = decode_switch_state(encode(state), why);
  ASSERT_TRUE(back) << why;
  EXPECT_EQ(back->build, state.build);
  EXPECT_EQ(back->started, state.started);
  EXPECT_EQ(back->switches, 4u);
  EXPECT_EQ(back->sessions_resumed, 7u);
  EXPECT_EQ(back->next_call_id, 90u);
  ASSERT_EQ(back->generations.size(), 1u);
  EXPECT_EQ(back->generations[0].generation, 3u);
  ASSERT_EQ(back->sessions.size(), 1u);
  EXPECT_EQ(back->sessions[0].record, state.sessions[0].record);
  EXPECT_EQ(back->sessions[0].socket, "computer-alpha-3");
  ASSERT_EQ(back->lost.size(), 1u);
  EXPECT_EQ(back->lost[0].computer, "beta");
  ASSERT_EQ(back->connections.size(), 2u);
  EXPECT_FALSE(back->connections[0].call);
  ASSERT_TRUE(back->connections[1].call);
  EXPECT_EQ(back->connections[1].call->call_id, 89u);
  EXPECT_TRUE(back->connections[1].call->streaming);
  ASSERT_EQ(back->tasks.size(), 1u);
  EXPECT_EQ(back->tasks[0].caller, "owner");
  EXPECT_EQ(back->requester, "requester");
  ASSERT_EQ(back->routes.size(), 1u);
  EXPECT_EQ(back->routes[0].routed_id, R"("sb-4")");
  EXPECT_EQ(back->routes[0].key, 2u);
  EXPECT_EQ(back->next_routed, 5u);
  ASSERT_EQ(back->subscriptions.size(), 1u);
  EXPECT_EQ(back->subscriptions[0].uri, "file:///a.md");
  EXPECT_EQ(back->subscriptions[0].mcp_session, "s-1");
  EXPECT_EQ(back->subscriptions[0].attached_at_ms, 5);
}

// Subscriptions are written last and only when there are some: a state without them is
// byte for byte what an earlier build wrote, and reads both ways.
TEST(SwitchState, AStateWithoutSubscriptionsIsWrittenAsAnEarlierBuildWroteIt) {
  SwitchState state = a_state();
  const std::size_t with = encode(state).size();
  state.subscriptions.clear();
  const std::string bytes = encode(state);
  EXPECT_LT(bytes.size(), with);
  std::string why;
  const auto back = decode_switch_state(bytes, why);
  ASSERT_TRUE(back) << why;
  EXPECT_TRUE(back->subscriptions.empty());
  EXPECT_EQ(back->next_routed, 5u);
  std::string zero(sizeof(std::uint64_t), '\0');  // an explicit count of none
  EXPECT_EQ(why_refused(bytes + zero), "an empty subscription section");
}

TEST(SwitchState, AStateCutShortForgedOrNamingADescriptorTwiceIsRefused) {
  const std::string bytes = encode(a_state());
  EXPECT_EQ(why_refused(bytes.substr(0, bytes.size() - 1)), "a state cut short");
  EXPECT_EQ(why_refused(bytes + "x"), "a state cut short or with bytes after it");
  EXPECT_EQ(why_refused(""), "a state of another version");
  SwitchState twice = a_state();
  twice.connections[0].socket = "computer-alpha-3";
  EXPECT_EQ(why_refused(encode(twice)), "a descriptor named twice or not at all");
  SwitchState no_call_id = a_state();
  no_call_id.connections[1].call->call_id = 0;
  EXPECT_EQ(why_refused(encode(no_call_id)), "a carried call without its id");
  SwitchState long_name = a_state();
  long_name.sessions[0].computer.assign(kMaxCarriedText + 1, 'n');
  EXPECT_EQ(why_refused(encode(long_name)), "a text over its bound");
}

TEST(SwitchState, AMemoryFileHoldsExactlyWhatWasWritten) {
  std::string why;
  const std::string bytes = encode(a_state());
  const base::UniqueFd file = memory_file("test-state", bytes, why);
  ASSERT_TRUE(file.valid()) << why;
  EXPECT_EQ(read_memory_file(file.get(), bytes.size(), why), bytes);
  EXPECT_FALSE(read_memory_file(file.get(), bytes.size() - 1, why));
  EXPECT_EQ(why, "a memory file over its bound");
  // Sealed: whoever holds it cannot change it under the reader.
  EXPECT_LT(::write(file.get(), "x", 1), 0);
}

TEST(InheritedDescriptors, VariablesForAnotherProcessAreIgnoredAndRemoved) {
  ::setenv("LISTEN_PID", "1", 1);
  ::setenv("LISTEN_FDS", "2", 1);
  ::setenv("LISTEN_FDNAMES", "a:b", 1);
  std::string why;
  EXPECT_TRUE(take_inherited_descriptors(why).empty());
  EXPECT_EQ(why, "LISTEN_PID names another process");
  EXPECT_EQ(std::getenv("LISTEN_FDS"), nullptr);
  EXPECT_EQ(std::getenv("LISTEN_FDNAMES"), nullptr);
}

TEST(InheritedDescriptors, NamesThatDoNotCountTheDescriptorsAreRefused) {
  ::setenv("LISTEN_PID", std::to_string(::getpid()).c_str(), 1);
  ::setenv("LISTEN_FDS", "2", 1);
  ::setenv("LISTEN_FDNAMES", "only-one", 1);
  std::string why;
  EXPECT_TRUE(take_inherited_descriptors(why).empty());
  EXPECT_EQ(why, "LISTEN_FDNAMES does not name each of LISTEN_FDS's descriptors");
  EXPECT_TRUE(valid_descriptor_name("computer-alpha-3"));
  EXPECT_FALSE(valid_descriptor_name("a:b"));
  EXPECT_FALSE(valid_descriptor_name(""));
}

}  // namespace
}  // namespace sb::supervisor
