// Fuzz target: switchboard-connect's kept session (connect/kept_session.hpp), the routing of
// every message between two switchboard links and one MCP server, each side less trusted.
//
// Input: records, each an operation byte and, for a message, a length byte and that many
// bytes. Operation: bits 0-1 are attach (0), detach (1), a message from the link (2), a
// message from the server (3); bit 2 names the link (0 or 1).
//
// Besides memory safety: a message only ever goes to a link that is attached; and while
// every message so far was JSON (as nlohmann reads it), everything routed, and everything
// a detach tells the server, is JSON too.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string_view>

#include "connect/kept_session.hpp"
#include "fuzz/fuzz_check.hpp"

namespace {

using sb::connect::KeptSession;
using sb::connect::LinkId;
using sb::connect::Routed;

bool is_json(std::string_view text) {
  return nlohmann::json::accept(text);
}

void check_routed(const KeptSession& session, const Routed& routed, bool all_json) {
  for (const auto& [link, message] : routed.to_links) {
    FUZZ_CHECK(session.attached(link));
    if (all_json) FUZZ_CHECK(is_json(message));
  }
  if (all_json && routed.to_server) FUZZ_CHECK(is_json(*routed.to_server));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  KeptSession session;
  bool all_json = true;
  std::size_t at = 0;
  while (at < size) {
    const std::uint8_t operation = data[at++];
    const LinkId link = (operation >> 2) & 1;
    switch (operation & 3) {
      case 0:
        session.attach(link);
        break;
      case 1:
        for (const auto& message : session.detach(link)) {
          if (all_json) FUZZ_CHECK(is_json(message));
        }
        FUZZ_CHECK(!session.attached(link));
        break;
      default: {
        if (at == size) return 0;
        const std::size_t wanted = data[at++];
        const std::size_t length = std::min(wanted, size - at);
        const std::string_view message(reinterpret_cast<const char*>(data + at), length);
        at += length;
        all_json = all_json && is_json(message);
        const Routed routed =
            (operation & 3) == 2 ? session.from_link(link, message) : session.from_server(message);
        check_routed(session, routed, all_json);
      }
    }
  }
  return 0;
}
