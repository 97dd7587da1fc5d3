// The two eras of MCP revisions a caller may speak (docs/protocol.md, "Eras"): the
// handshake revisions (2024-11-05 to 2025-11-25: `initialize`, sessions, requests from the
// server on the caller's stream) and the stateless 2026-07-28 one (`_meta` on every
// request, `resultType` on every result). Read once where a caller's message arrives, and
// asked everywhere an answer differs by era.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string_view>

#include "shared/jsonrpc.hpp"

namespace sb::supervisor {

inline constexpr std::string_view kStatelessRevision = jsonrpc::kStatelessRevision;

enum class Era : std::uint8_t { kHandshake, kStateless };

// The era a message's own `params._meta` names: stateless when its protocolVersion is
// 2026-07-28, the handshake era otherwise (a handshake revision names none).
inline Era era_of(const nlohmann::json& message) {
  if (!message.is_object()) return Era::kHandshake;
  const auto params = message.find("params");
  if (params == message.end() || !params->is_object()) return Era::kHandshake;
  const auto meta = params->find("_meta");
  if (meta == params->end() || !meta->is_object()) return Era::kHandshake;
  const auto version = meta->find("io.modelcontextprotocol/protocolVersion");
  return version != meta->end() && *version == kStatelessRevision ? Era::kStateless
                                                                  : Era::kHandshake;
}

}  // namespace sb::supervisor
