// The client side of the control socket (control_server.hpp), for the commands that ask
// the running supervisor something: one request line out, its whole answer back.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <chrono>
#include <filesystem>
#include <optional>
#include <string>

namespace sb::supervisor {

// The supervisor's answer, or why there is none.
struct ControlAnswer {
  std::optional<std::string> reply;
  std::string failure;
};

// Sends `request` (one word) on the control socket at `path` and reads the answer to its
// end, within `deadline`. `config_path` is only for the message when nobody answers.
// Taken by value: the coroutine runs after the caller's temporaries are gone.
boost::asio::awaitable<ControlAnswer> ask_control(std::filesystem::path path,
                                                  std::string config_path, std::string request,
                                                  std::chrono::milliseconds deadline);

}  // namespace sb::supervisor
