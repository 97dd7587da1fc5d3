#include "bench/bare_relay_peer.hpp"

#include <chrono>
#include <sstream>
#include <stdexcept>
#include <string>

#include "harness/wait.hpp"

namespace sbbench {

using namespace std::chrono_literals;

BareRelay::BareRelay(int computers, ComputerFleet& fleet) {
  const auto out = dir_.path() / "stdout";
  const auto err = dir_.path() / "stderr";
  pid_ = harness::start_process(
      {(harness::bin_dir() / "switchboard-bare-relay").string(), std::to_string(port_),
       std::to_string(computer_port_), std::to_string(computers)},
      out, err);
  auto fail = [&](const std::string& what) {
    harness::stop_process(pid_, 2s);
    throw std::runtime_error("the bare relay " + what + ": " + harness::read_file(err));
  };
  // Its computer port takes exactly `computers` connections: nothing may probe it.
  if (!harness::eventually([&] { return harness::read_file(out).starts_with("listening"); }, 10s))
    fail("did not listen");
  const int before = fleet.initialized();
  for (int i = 0; i < computers; ++i) fleet.dial(computer_port_, "bare");
  if (!fleet.wait_initialized(before + computers, 30s)) fail("did not attach its computers");
}

BareRelay::~BareRelay() {
  harness::stop_process(pid_, 2s);
}

std::vector<pid_t> BareRelay::pids() const {
  std::vector<pid_t> pids{pid_};
  std::istringstream children(harness::read_file("/proc/" + std::to_string(pid_) + "/task/" +
                                                 std::to_string(pid_) + "/children"));
  for (pid_t child; children >> child;) pids.push_back(child);
  return pids;
}

}  // namespace sbbench
