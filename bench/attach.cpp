#include "bench/attach.hpp"

#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <thread>

namespace sbbench {
namespace {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;
using json = nlohmann::json;

bool wait_all_ready(const BenchSwitchboard& switchboard, int count, Clock::duration timeout) {
  HttpPoller poller(switchboard.port(), switchboard.token());
  const auto deadline = Clock::now() + timeout;
  while (ready_count(poller) < count) {
    if (Clock::now() > deadline) return false;
    std::this_thread::sleep_for(5ms);
  }
  return true;
}

}  // namespace

int ready_count(HttpPoller& poller) {
  const auto answer = poller.get("/computers");
  if (!answer || answer->first != 200) return -1;
  const auto list = json::parse(answer->second, nullptr, false);
  if (!list.is_array()) return -1;
  int ready = 0;
  for (const auto& entry : list) ready += entry.is_object() && entry.value("ready", false);
  return ready;
}

void attach_all(BenchSwitchboard& switchboard, ComputerFleet& fleet, int count) {
  for (int i = 0; i < count; ++i)
    fleet.dial(switchboard.port(), switchboard.computers()[std::size_t(i)].secret);
  if (!fleet.wait_initialized(count, kReadyTimeout) ||
      !wait_all_ready(switchboard, count, kReadyTimeout)) {
    throw std::runtime_error("the fake computers did not all become ready (" +
                             std::to_string(fleet.initialized()) + "/" + std::to_string(count) +
                             " initialized, " + std::to_string(fleet.dial_failures()) +
                             " dials failed)\n--- switchboard log ---\n" + switchboard.log_tail());
  }
}

}  // namespace sbbench
