// Fuzz target: what crosses a switch in place from the old processes
// (docs/architecture.md, "Switching"): a worker's parked session (ipc/parked_session.hpp),
// read by the supervisor and the next worker, and the supervisor's state
// (supervisor/switching/switch_state.hpp), read by the next supervisor.
//
// Input: a selector byte (even: a parked session, odd: a state), then the bytes. Checked:
// a refusal has a reason; what is accepted keeps the promises its reader relies on (ids
// below the next id and unique, routes to calls held, every size within its bound, each
// descriptor named once) and encodes to the very bytes it was read from (a record of an
// earlier version, to one that reads back the same).
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <set>
#include <string>

#include "fuzz/fuzz_check.hpp"
#include "ipc/parked_session.hpp"
#include "supervisor/switching/switch_state.hpp"

namespace {

void check_record(const std::string& bytes) {
  std::string why;
  const auto record = sb::ipc::decode_parked_session(bytes, why);
  if (!record) {
    FUZZ_CHECK(!why.empty());
    return;
  }
  FUZZ_CHECK(record->generation != 0 && record->next_id != 0);
  FUZZ_CHECK(record->max_inflight >= 1 &&
             record->calls.size() <= static_cast<std::size_t>(record->max_inflight));
  FUZZ_CHECK(record->unread.size() <= sb::ipc::kMaxUnreadBytes);
  std::set<std::uint64_t> ids;
  for (const auto& call : record->calls) {
    FUZZ_CHECK(call.id != 0 && call.id < record->next_id && call.call_id != 0);
    FUZZ_CHECK(ids.insert(call.id).second);
  }
  for (const auto& route : record->routed) {
    FUZZ_CHECK(ids.contains(route.pending_id) && route.key < record->next_route_key);
  }
  // A record of the current version encodes to the very bytes it was read from; one of an
  // earlier version (still read, so that an upgrade keeps its computers) to a current
  // record that reads back as itself.
  const std::string encoded = sb::ipc::encode(*record);
  std::uint64_t version = 0;
  std::memcpy(&version, bytes.data(), sizeof version);  // a record is longer than this
  if (version == sb::ipc::kParkedSessionVersion) {
    FUZZ_CHECK(encoded == bytes);
  } else {
    const auto again = sb::ipc::decode_parked_session(encoded, why);
    FUZZ_CHECK(again && sb::ipc::encode(*again) == encoded);
  }
}

void check_state(const std::string& bytes) {
  std::string why;
  const auto state = sb::supervisor::decode_switch_state(bytes, why);
  if (!state) {
    FUZZ_CHECK(!why.empty());
    return;
  }
  FUZZ_CHECK(state->next_call_id != 0);
  std::set<std::string> names;
  for (const auto& session : state->sessions) {
    FUZZ_CHECK(session.generation != 0 && names.insert(session.socket).second);
  }
  for (const auto& connection : state->connections) {
    FUZZ_CHECK(names.insert(connection.socket).second);
    FUZZ_CHECK(!connection.call || connection.call->call_id != 0);
  }
  FUZZ_CHECK(sb::supervisor::encode(*state) == bytes);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1) return 0;
  const std::string bytes(reinterpret_cast<const char*>(data) + 1, size - 1);
  if (data[0] % 2 == 0) {
    check_record(bytes);
  } else {
    check_state(bytes);
  }
  return 0;
}
