// A session's record as one worker leaves it for the next (docs/architecture.md,
// "Switching"): it round-trips field for field, and anything but exactly one record of
// this version whose fields agree is refused with the reason, never read with defaults.
#include "ipc/parked_session.hpp"

#include <gtest/gtest.h>

namespace sb::ipc {
namespace {

using namespace std::chrono_literals;

ParkedSession a_record() {
  const SteadyTime now = std::chrono::steady_clock::now();
  return ParkedSession{.generation = 3,
                       .peer = "10.0.0.1:5",
                       .max_inflight = 8,
                       .attached_at_ms = 1'700'000'000'000,
                       .attached_at = now - 5s,
                       .server_json = R"({"name":"fake","version":"1"})",
                       .offers = offer::kLogging | offer::kPrompts,
                       .next_id = 12,
                       .next_route_key = 3,
                       .calls = {{.id = 10,
                                  .call_id = 77,
                                  .caller = "alice",
                                  .stream = true,
                                  .progress_token = R"("job")",
                                  .timeout = 60s,
                                  .deadline = now + 30s,
                                  .last_moment = now + 500s},
                                 {.id = 11, .call_id = 78, .caller = "bob", .timeout = 5s}},
                       .routed = {{.key = 2, .pending_id = 10, .original_id = R"("ask-1")"}},
                       .listen_uris = {"demo://a", "demo://b"},
                       .newest_listen = 11,
                       .active_listen = 9,
                       .log_level = "warning",
                       .unread = std::string("\x81\x05hel", 5)};
}

std::string why_refused(const std::string& bytes) {
  std::string why;
  EXPECT_FALSE(decode_parked_session(bytes, why));
  return why;
}

TEST(ParkedSession, RoundTripsEveryField) {
  const ParkedSession record = a_record();
  std::string why;
  const auto back = decode_parked_session(encode(record), why);
  ASSERT_TRUE(back) << why;
  EXPECT_EQ(back->generation, 3u);
  EXPECT_EQ(back->peer, record.peer);
  EXPECT_EQ(back->max_inflight, 8);
  EXPECT_EQ(back->attached_at_ms, record.attached_at_ms);
  EXPECT_EQ(back->attached_at, record.attached_at);
  EXPECT_EQ(back->server_json, record.server_json);
  EXPECT_EQ(back->offers, offer::kLogging | offer::kPrompts);
  EXPECT_EQ(back->next_id, 12u);
  EXPECT_EQ(back->next_route_key, 3u);
  ASSERT_EQ(back->calls.size(), 2u);
  EXPECT_EQ(back->calls[0].call_id, 77u);
  EXPECT_EQ(back->calls[0].progress_token, R"("job")");
  EXPECT_EQ(back->calls[0].deadline, record.calls[0].deadline);
  EXPECT_EQ(back->calls[0].last_moment, record.calls[0].last_moment);
  EXPECT_TRUE(back->calls[0].stream);
  EXPECT_EQ(back->calls[1].caller, "bob");
  ASSERT_EQ(back->routed.size(), 1u);
  EXPECT_EQ(back->routed[0].original_id, R"("ask-1")");
  EXPECT_EQ(back->listen_uris, record.listen_uris);
  EXPECT_EQ(back->newest_listen, 11u);
  EXPECT_EQ(back->active_listen, 9u);
  EXPECT_EQ(back->log_level, "warning");
  EXPECT_EQ(back->unread, record.unread);
}

// `record` (without a call's retry) as a worker of version 3 wrote it: nothing after each
// call's last moment (an empty method, empty params and no rounds: 24 bytes).
std::string as_version_3(ParkedSession record) {
  std::size_t at = 8 * 11 + record.peer.size() + record.server_json.size();
  std::string bytes = encode(record);
  bytes[0] = 3;
  for (const auto& call : record.calls) {
    EXPECT_TRUE(call.ask_method.empty() && call.ask_params.empty() && call.ask_rounds == 0);
    at += 57 + call.caller.size() + call.progress_token.size();
    bytes.erase(at, 24);
  }
  return bytes;
}

// `record` (without a listen or a log level) as a worker of version 2 wrote it: as version
// 3, with no listen and no log level between the routes and the unread bytes.
std::string as_version_2(ParkedSession record) {
  record.listen_uris.clear();
  record.newest_listen = record.active_listen = 0;
  record.log_level.clear();
  std::string bytes = as_version_3(record);
  bytes[0] = 2;
  const std::size_t listen_bytes = 8 * 4;  // two ids, a count, an empty text
  bytes.erase(bytes.size() - 8 - record.unread.size() - listen_bytes, listen_bytes);
  return bytes;
}

// `record` as a worker of version 1 wrote it: as version 2, with its offers in one byte
// (after the version, generation, peer, in-flight cap, both attach times and server info).
std::string as_version_1(const ParkedSession& record) {
  std::string bytes = as_version_2(record);
  bytes[0] = 1;
  const std::size_t offers_at = 8 * 7 + record.peer.size() + record.server_json.size();
  bytes.replace(offers_at, 8, 1, static_cast<char>(record.offers));
  return bytes;
}

TEST(ParkedSession, RecordsOfThePreviousVersionsAreStillRead) {
  const ParkedSession record = a_record();
  for (const std::string& bytes : {as_version_1(record), as_version_2(record)}) {
    std::string why;
    const auto back = decode_parked_session(bytes, why);
    ASSERT_TRUE(back) << why;
    EXPECT_EQ(back->offers, offer::kLogging | offer::kPrompts);
    EXPECT_EQ(back->next_id, 12u);
    EXPECT_EQ(back->calls.size(), 2u);
    EXPECT_TRUE(back->listen_uris.empty());
    EXPECT_EQ(back->log_level, "");
    EXPECT_EQ(back->unread, record.unread);
  }
  std::string why;
  const auto version_3 = decode_parked_session(as_version_3(record), why);
  ASSERT_TRUE(version_3) << why;
  EXPECT_EQ(version_3->calls[1].caller, "bob");
  EXPECT_EQ(version_3->log_level, "warning");
}

// A call a 2026-only computer may answer input-required crosses with what its retry needs.
TEST(ParkedSession, ACallsRetryCrosses) {
  ParkedSession record = a_record();
  record.calls[0].ask_method = "tools/call";
  record.calls[0].ask_params = R"({"name":"ask","_meta":{}})";
  record.calls[0].ask_rounds = 2;
  std::string why;
  const auto back = decode_parked_session(encode(record), why);
  ASSERT_TRUE(back) << why;
  EXPECT_EQ(back->calls[0].ask_method, "tools/call");
  EXPECT_EQ(back->calls[0].ask_params, record.calls[0].ask_params);
  EXPECT_EQ(back->calls[0].ask_rounds, 2u);
  EXPECT_EQ(back->calls[1].ask_method, "");
  for (const std::string& params :
       {std::string("[]"), std::string(kMaxParkedRetryBytes + 1, ' '), std::string()}) {
    record.calls[0].ask_params = params;
    EXPECT_EQ(why_refused(encode(record)), "a call's retry out of bounds") << params.size();
  }
}

TEST(ParkedSession, TheStatelessOnlyBitCrosses) {
  ParkedSession record = a_record();
  record.offers |= offer::kStatelessOnly;
  std::string why;
  const auto back = decode_parked_session(encode(record), why);
  ASSERT_TRUE(back) << why;
  EXPECT_EQ(back->offers, offer::kLogging | offer::kPrompts | offer::kStatelessOnly);
  record.offers = offer::kAll + 1;
  EXPECT_EQ(why_refused(encode(record)), "a field out of range");
  // A bit beyond the 32 the offers have, in the number the record carries them in.
  std::string high_bit = encode(a_record());
  const std::size_t offers_at = 8 * 7 + a_record().peer.size() + a_record().server_json.size();
  high_bit[offers_at + 4] = 1;
  EXPECT_EQ(why_refused(high_bit), "a field out of range");
}

TEST(ParkedSession, ABytePastOrShortIsRefused) {
  const std::string bytes = encode(a_record());
  EXPECT_EQ(why_refused(bytes + "x"), "a record cut short or with bytes after it");
  EXPECT_EQ(why_refused(bytes.substr(0, bytes.size() - 1)),
            "a record cut short or with bytes after it");
  EXPECT_EQ(why_refused(""), "a record of another version");
  std::string other_version = bytes;
  other_version[0] = 5;
  EXPECT_EQ(why_refused(other_version), "a record of another version");
}

TEST(ParkedSession, FieldsThatDisagreeAreRefused) {
  auto refused = [](auto change) {
    ParkedSession record = a_record();
    change(record);
    return why_refused(encode(record));
  };
  EXPECT_EQ(refused([](ParkedSession& r) { r.calls[0].id = 12; }),
            "a call id the socket never issued");
  EXPECT_EQ(refused([](ParkedSession& r) { r.calls[1].call_id = 77; }), "a call listed twice");
  EXPECT_EQ(refused([](ParkedSession& r) { r.calls[0].call_id = 0; }),
            "a call without the supervisor's call id");
  EXPECT_EQ(refused([](ParkedSession& r) { r.calls[0].progress_token = "[1]"; }),
            "a progress token that is not a string or an integer");
  EXPECT_EQ(refused([](ParkedSession& r) { r.routed[0].pending_id = 11'000; }),
            "a route to a call not held");
  EXPECT_EQ(refused([](ParkedSession& r) { r.routed[0].key = 3; }), "a route key never issued");
  EXPECT_EQ(refused([](ParkedSession& r) { r.max_inflight = 1; }),
            "more calls than its in-flight cap");
  EXPECT_EQ(refused([](ParkedSession& r) { r.max_inflight = 65; }),
            "an in-flight cap out of range");
  EXPECT_EQ(refused([](ParkedSession& r) { r.server_json = "[]"; }),
            "server info that is not an object");
  EXPECT_EQ(refused([](ParkedSession& r) { r.generation = 0; }), "no generation");
  EXPECT_EQ(refused([](ParkedSession& r) { r.unread.assign(kMaxUnreadBytes + 1, 'x'); }),
            "more unread bytes than a read takes");
  EXPECT_EQ(refused([](ParkedSession& r) { r.peer.assign(kMaxRecordText + 1, 'p'); }),
            "a peer label out of bounds");
  EXPECT_EQ(refused([](ParkedSession& r) { r.listen_uris[1] = "demo://a"; }),
            "a listened URI listed twice");
  EXPECT_EQ(refused([](ParkedSession& r) { r.listen_uris[0].assign(kMaxListenUriBytes + 1, 'u'); }),
            "a listened URI out of bounds");
  EXPECT_EQ(refused([](ParkedSession& r) { r.listen_uris.assign(kMaxParkedListenUris + 1, "u"); }),
            "more listened URIs than a worker keeps");
  EXPECT_EQ(refused([](ParkedSession& r) { r.active_listen = 12; }),
            "a listen id the socket never issued");
  EXPECT_EQ(refused([](ParkedSession& r) { r.log_level = "loud"; }),
            "a log level MCP does not have");
}

}  // namespace
}  // namespace sb::ipc
