#include "supervisor/http/connection_park.hpp"

#include <utility>

namespace sb::supervisor {

void ConnectionPark::let_calls_park() {
  calls_may_park_ = true;
  if (waiting_ == 0 && done_) std::exchange(done_, nullptr)();
}

void ConnectionPark::parked(base::UniqueFd socket, std::string bytes,
                            std::optional<CarriedCall> call) {
  // Short: a service manager hands every name over in one environment variable.
  std::string name = std::string(kCallerPrefix) + std::to_string(sockets_.size() + 1);
  connections_.push_back(
      CarriedConnection{.socket = name, .bytes = std::move(bytes), .call = call});
  sockets_.push_back({std::move(name), std::move(socket)});
  one_less();
}

void ConnectionPark::dropped() {
  one_less();
}

void ConnectionPark::one_less() {
  if (waiting_ > 0) --waiting_;
  if (waiting_ == 0 && calls_may_park_ && done_) std::exchange(done_, nullptr)();
}

}  // namespace sb::supervisor
