// switchboard-worker: started by the supervisor, never by hand.
#include <csignal>
#include <cstdlib>
#include <exception>
#include <iostream>
#include <string>
#include <string_view>

#include "shared/log.hpp"
#include "worker/sandbox.hpp"
#include "worker/worker_app.hpp"

int main(int argc, char** argv) {
  std::string status_segment;
  int channel_fd = -1;
  int descriptor_fd = -1;
  int record_fd = -1;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string_view flag = argv[i];
    if (flag == "--channel-fd") channel_fd = std::atoi(argv[i + 1]);
    if (flag == "--descriptor-fd") descriptor_fd = std::atoi(argv[i + 1]);
    if (flag == "--record-fd") record_fd = std::atoi(argv[i + 1]);
    if (flag == "--status-segment") status_segment = argv[i + 1];
  }
  if (channel_fd < 0 || descriptor_fd < 0 || status_segment.empty()) {
    std::cerr << "switchboard-worker is started by `switchboard serve`, not by hand\n";
    return 2;
  }
  std::signal(SIGPIPE, SIG_IGN);
  try {
    boost::asio::io_context io;
    sb::worker::WorkerApp app(
        io,
        sb::ipc::ChannelEnd{sb::base::UniqueFd(channel_fd), sb::base::UniqueFd(descriptor_fd),
                            sb::ipc::Descriptors::kReceived},
        status_segment, sb::base::UniqueFd(record_fd));
    app.start();
    // Everything the worker opens it holds by now; what its computer might make it do
    // from here on is bounded by the filter.
    if (const auto failure = sb::worker::enter_sandbox()) {
      sb::log_error("worker cannot enter its sandbox", {{"error", *failure}});
      return 1;
    }
    io.run();
  } catch (const std::exception& error) {
    sb::log_error("worker failed", {{"error", error.what()}});
    return 1;
  }
  return 0;
}
