#include "harness/kernel_sockets.hpp"

#include <fstream>
#include <functional>
#include <sstream>
#include <string>

namespace harness {

namespace {

struct SocketRow {
  int local_port = 0;
  std::string state;  // two hex digits: 01 ESTABLISHED, 04 FIN_WAIT1, 09 LAST_ACK, 0B CLOSING
  std::size_t unsent = 0;
};

void for_each_socket(const std::function<void(const SocketRow&)>& visit) {
  for (const char* table : {"/proc/net/tcp", "/proc/net/tcp6"}) {
    std::ifstream file(table);
    std::string line;
    std::getline(file, line);  // the column names
    while (std::getline(file, line)) {
      std::istringstream fields(line);
      std::string slot, local, remote, state, queues;
      fields >> slot >> local >> remote >> state >> queues;
      visit(SocketRow{.local_port = std::stoi(local.substr(local.rfind(':') + 1), nullptr, 16),
                      .state = state,
                      .unsent = std::stoul(queues.substr(0, queues.find(':')), nullptr, 16)});
    }
  }
}

}  // namespace

Orphans orphans_holding_bytes(int port) {
  Orphans orphans;
  for_each_socket([&](const SocketRow& row) {
    const bool closed = row.state == "04" || row.state == "0B" || row.state == "09";
    if (row.local_port != port || !closed || row.unsent == 0) return;
    ++orphans.sockets;
    orphans.unsent_bytes += row.unsent;
  });
  return orphans;
}

std::size_t established_on(int port) {
  std::size_t open = 0;
  for_each_socket([&](const SocketRow& row) {
    if (row.local_port == port && row.state == "01") ++open;
  });
  return open;
}

std::size_t unsent_on(int port) {
  std::size_t unsent = 0;
  for_each_socket([&](const SocketRow& row) {
    if (row.local_port == port) unsent += row.unsent;
  });
  return unsent;
}

}  // namespace harness
