// A 2026-07-28 caller's call to a computer that asks its caller things during a call (a
// handshake-era computer's elicitation, sampling and roots requests, which that revision
// does not have): each request the caller declared it can take ends the caller's HTTP
// request with an input-required result, and the caller's retry, naming the round's
// requestState, answers the computer and takes the call up where it stands
// (docs/protocol.md, "Input required"). The call stays one call at the computer
// throughout, audited once, under its timeouts.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "supervisor/mcp/call_book.hpp"
#include "supervisor/mcp/exchange.hpp"
#include "supervisor/mcp/input_book.hpp"
#include "supervisor/workers/registry.hpp"

namespace sb::supervisor {

struct BridgedCall {
  struct Asked {
    std::uint64_t key = 0;   // the worker's, for its answer
    nlohmann::json request;  // {"method", "params"} as the computer sent them
  };

  CallOwner owner;
  std::string method;
  std::uint64_t call_id = 0;
  nlohmann::json first_id;  // the id the call's reply is made with
  // The request the call answers now (the first, or the retry that took the last round
  // up), what it declared it can take, and where its answer goes; none between rounds.
  nlohmann::json request_id;
  nlohmann::json declared;
  std::string log_level;  // its `_meta` log level, "" for none (log_levels.hpp)
  McpDone done;
  McpMessage on_message;
  std::function<void()> abandon;       // ends the call: its current caller is gone
  std::optional<std::uint64_t> round;  // waiting for a retry
  std::map<std::string, Asked> asked;  // not answered yet, by input key
};

// A bridge for the exchange's call when its caller may be given input-required results
// for it (a 2026-07-28 caller's tools/call, resources/read or prompts/get); else null.
std::shared_ptr<BridgedCall> bridge_for(const Exchange& exchange, std::string_view method);

// Where the bridged call's reply goes: to the request current when it comes, under that
// request's id. Between rounds it goes nowhere (the call's caller has not retried).
McpDone bridged_done(std::shared_ptr<BridgedCall> call, InputBook& book);

// The bridged call's messages from the computer: progress and notifications to the
// current request, a request the caller declared it can take to an input-required round,
// any other refused to the computer.
MessageCallback bridged_sink(const Exchange& exchange, std::shared_ptr<BridgedCall> call);

// A 2026-07-28 caller's retry naming a round's requestState: the computer gets the
// caller's answers and the call goes on, answering this request. Nothing when the request
// names no state of the switchboard's (a computer's own passes through).
std::optional<Underway> take_up_round(const Exchange& exchange);

}  // namespace sb::supervisor
