#include "supervisor/workers/status_json.hpp"

#include <chrono>

#include "base/unix_time.hpp"

namespace sb::supervisor {

nlohmann::json computer_status_json(const ComputerView& view, bool show_internals) {
  using nlohmann::json;
  if (!view.attached) return json{{"attached", false}, {"computer", view.name}, {"ready", false}};
  const auto now_ms = unix_time_now<std::chrono::milliseconds>();
  json status{{"attached", true},
              {"attached_for_secs",
               std::max<std::int64_t>(0, (now_ms - view.status.attached_at_ms) / 1000)},
              {"computer", view.name},
              {"max_in_flight", view.status.max_in_flight},
              {"ready", view.ready},
              {"server", json::parse(view.status.server_json, nullptr, false)}};
  if (status["server"].is_discarded()) status["server"] = nullptr;
  if (show_internals) {
    status["peer"] = view.status.peer;
    status["in_flight"] = view.status.in_flight;
  }
  return status;
}

}  // namespace sb::supervisor
