// Forwarding one request to its computer, and what its caller may do while it is in
// flight (docs/protocol.md, "Cancellation" and "Requests from the computer"): the call is
// kept nameable through the call book, so that the caller's notifications/cancelled, its
// hang-up and its answers to the computer's requests all find it.
#pragma once

#include <functional>
#include <string_view>

#include "supervisor/mcp/exchange.hpp"
#include "supervisor/workers/registry.hpp"

namespace sb::supervisor {

// Sends `request` to the exchange's computer; `reply` makes the caller's reply from the
// result, which waits in memory only within the reply budget (docs/robustness.md,
// "Memory"). `ended_early` hears "cancelled" or "abandoned" when the call ends without a
// reply. The returned Underway names the call and ends it when its caller is gone.
Underway forward(const Exchange& exchange, CallRequest request,
                 std::function<ReplyText(CallResult)> reply,
                 std::function<void(std::string_view outcome)> ended_early = {});

// The exchange's request as it goes to its computer: `method` with the caller's params,
// under its caller's name and share, to be answered within `timeout_secs`.
CallRequest request_to_computer(const Exchange& exchange, std::string method, int timeout_secs);

// notifications/cancelled from the caller: ends the one call of its own it names.
void cancel_call(const Exchange& exchange);

// A response from the caller: its answer to a request the computer routed to it.
Underway answer_routed_request(const Exchange& exchange);

}  // namespace sb::supervisor
