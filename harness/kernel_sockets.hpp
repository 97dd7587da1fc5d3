// What the kernel holds of a server's TCP sockets, read from /proc/net/tcp and tcp6.
#pragma once

#include <cstddef>

namespace harness {

// Connections of `port` the server has closed while the kernel still holds bytes of theirs
// to send (FIN_WAIT1, CLOSING or LAST_ACK with a send queue): orphans, and their bytes.
struct Orphans {
  std::size_t sockets = 0;
  std::size_t unsent_bytes = 0;
};
Orphans orphans_holding_bytes(int port);

// Connections of `port` still open (ESTABLISHED) on its side.
std::size_t established_on(int port);

// The bytes the kernel holds to send from `port`'s side, over every connection in any state.
std::size_t unsent_on(int port);

}  // namespace harness
