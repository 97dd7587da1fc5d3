// A computer's GET /vm/attach (docs/protocol.md, "Attach"): the upgrade checked, then the
// socket itself, the request and whatever was read past it passed through the door, which
// checks the secret and hands the socket to the computer's worker. The worker completes the
// WebSocket handshake.
#pragma once

#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <functional>
#include <optional>
#include <string>

#include "base/unique_fd.hpp"
#include "supervisor/http/request_reader.hpp"
#include "supervisor/http/types.hpp"
#include "supervisor/workers/hand_over.hpp"

namespace sb::supervisor {

// What lets a computer in (routes/ keeps it): first whether the bearer token is some
// computer's secret (a refusal audited and counted there), and only then, for one that is,
// the socket handed to its worker. `enter` takes `socket` only for HandOver::kDone.
struct ComputerDoor {
  std::function<bool(const std::optional<std::string>& bearer_token, const std::string& peer)>
      admits;
  std::function<HandOver(const std::string& bearer_token, base::UniqueFd& socket,
                         std::string upgrade_bytes, const std::string& peer)>
      enter;
};

// Nothing when the socket has left `stream` (to a worker, or to be closed 4003 as a
// WebSocket); otherwise the response to write before the connection closes.
std::optional<HttpResponse> attach_computer(boost::beast::tcp_stream& stream, Request request,
                                            const boost::beast::flat_buffer& read_past,
                                            const std::string& peer, const ComputerDoor& door);

}  // namespace sb::supervisor
