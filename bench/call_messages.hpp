// The JSON-RPC text every caller sends and its check of what comes back, built the same way
// on every path, so that the difference between two paths is what the relay costs.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "bench/callers.hpp"

namespace sbbench {

// The caller's work before a call: the request, built the same way on both paths.
// A 2026-07-28 caller's (`stateless`) carries that revision's `_meta`.
std::string request_body(int caller, std::uint64_t id, const CallSpec& spec,
                         bool stateless = false);
// The tool a call of `spec` names.
std::string_view tool_of(const CallSpec& spec);
std::string held_call_body(std::uint64_t id);
std::string cancel_body(std::uint64_t id);
// Whether `text` is a notifications/progress for the progress token of call `id`.
bool is_progress_of(std::string_view text, std::uint64_t id);
// The caller's work after a call: an error text unless `body` answers that request.
std::optional<std::string> check_reply(std::string_view body, int caller, std::uint64_t id,
                                       const CallSpec& spec);

}  // namespace sbbench
