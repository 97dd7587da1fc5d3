// Subscriptions to a computer's resources (docs/protocol.md, "Subscriptions"): a caller
// subscribes to a URI its grant allows; the computer is subscribed once per URI however many
// callers are, and unsubscribed when the last one goes; its updates reach every subscriber
// on the event stream that subscriber opened with GET, and a stream that ends ends its
// subscriptions. Bounded per caller by `[limits] max_subscriptions`.
#pragma once

#include <chrono>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "supervisor/mcp/exchange.hpp"
#include "supervisor/mcp/stream_board.hpp"

namespace sb::supervisor {

Underway resources_subscribe(const Exchange& exchange);
Underway resources_unsubscribe(const Exchange& exchange);
// 2026-07-28's stream for what belongs to no call (docs/protocol.md, "Subscriptions"):
// acknowledged first with what of its filter is honoured, then each list change and
// subscribed resource's update it asked for, tagged with its subscription id, until the
// caller hangs up.
Underway subscriptions_listen(const Exchange& exchange);

// Opens `key`'s stream, whose messages go to `sink`. What to call when it ends; none when
// that caller's session has one open on that computer already.
std::optional<std::function<void()>> open_notification_stream(const McpServices& services,
                                                              std::chrono::seconds control_timeout,
                                                              const StreamKey& key,
                                                              StreamBoard::Sink sink);

// Subscriptions whose caller has had no stream open for them for `window` (the resume
// window) end, as the end of its stream would have ended them; run every so often.
void lapse_streamless_subscriptions(const McpServices& services, std::chrono::seconds window,
                                    std::chrono::seconds control_timeout);

// A computer's notifications/resources/updated (an object, as `body` reads): to every
// subscriber of its URI that has its stream open; dropped, and counted, when none has.
void relay_resource_update(const McpServices& services, const std::string& computer,
                           const nlohmann::json& message, const std::string& body);

// A computer's notifications/tools/list_changed or notifications/prompts/list_changed: to
// every stream open on it that takes it; dropped, and counted, when none is open.
void relay_list_change(const McpServices& services, const std::string& computer,
                       const std::string& body);

}  // namespace sb::supervisor
