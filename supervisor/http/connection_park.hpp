// A switch in place gathering the HTTP server's connections (docs/architecture.md,
// "Switching"). Each open connection parks itself here as soon as it stands between two
// requests, or, once the workers have parked (`calls_may_park`), while the call it waits
// for is in flight with nothing of its response being written; one that cannot by the end
// of the drain is dropped, as a connection the caller lost.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "base/unique_fd.hpp"
#include "supervisor/switching/descriptors.hpp"
#include "supervisor/switching/switch_state.hpp"

namespace sb::supervisor {

class ConnectionPark {
 public:
  // `done` runs once every connection that was open has parked or been dropped, and calls
  // may park.
  ConnectionPark(std::size_t open, std::function<void()> done)
      : waiting_(open), done_(std::move(done)) {}

  bool calls_may_park() const { return calls_may_park_; }
  bool giving_up() const { return giving_up_; }
  void let_calls_park();
  void give_up() { giving_up_ = true; }
  // A connection opened while the park gathers (one accepted just as accepting stopped):
  // it is waited for too.
  void joined() { ++waiting_; }

  // A connection parked: `bytes` are read from it first in the next process (a request not
  // yet answered, whole, and what followed it); `call` is the call that request is.
  void parked(base::UniqueFd socket, std::string bytes, std::optional<CarriedCall> call);
  // A connection ended (or was ended) without parking.
  void dropped();

  std::vector<CarriedConnection> take_connections() { return std::move(connections_); }
  std::vector<NamedDescriptor> take_sockets() { return std::move(sockets_); }

 private:
  void one_less();

  std::size_t waiting_;
  std::function<void()> done_;
  bool calls_may_park_ = false;
  bool giving_up_ = false;
  std::vector<CarriedConnection> connections_;
  std::vector<NamedDescriptor> sockets_;
};

}  // namespace sb::supervisor
