#include "supervisor/http/attach_hand_over.hpp"

#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/websocket.hpp>
#include <memory>
#include <sstream>

#include "shared/verifier.hpp"

namespace sb::supervisor {
namespace {

namespace beast = boost::beast;
namespace http = boost::beast::http;
namespace websocket = boost::beast::websocket;
using tcp = boost::asio::ip::tcp;

// Completes an upgrade only to close it with `code`: an attach whose secret was rotated
// out between the check and the hand-over is told to stop.
void refuse_upgraded(tcp::socket socket, Request request, std::uint16_t code, std::string reason) {
  struct Refusal {
    websocket::stream<tcp::socket> ws;
    Request request;
  };
  auto refusal = std::make_shared<Refusal>(
      Refusal{websocket::stream<tcp::socket>(std::move(socket)), std::move(request)});
  refusal->ws.async_accept(refusal->request, [refusal, code, reason](beast::error_code error) {
    if (error) return;
    refusal->ws.async_close(
        websocket::close_reason(static_cast<websocket::close_code>(code), reason),
        [refusal](beast::error_code) {});
  });
}

// The upgrade request and whatever followed it: what the worker completes the handshake
// from.
std::string upgrade_bytes(const Request& request, const beast::flat_buffer& read_past) {
  std::ostringstream upgrade;
  upgrade << request;
  std::string bytes = upgrade.str();
  const auto extra = read_past.cdata();
  bytes.append(static_cast<const char*>(extra.data()), extra.size());
  return bytes;
}

}  // namespace

std::optional<HttpResponse> attach_computer(beast::tcp_stream& stream, Request request,
                                            const beast::flat_buffer& read_past,
                                            const std::string& peer, const ComputerDoor& door) {
  if (!websocket::is_upgrade(request)) return text_response(400, "expected a WebSocket upgrade");
  if (request[http::field::sec_websocket_version] != "13") {
    auto response = text_response(426, "WebSocket version 13 required");
    response.headers.emplace_back("Sec-WebSocket-Version", "13");
    return response;
  }
  if (request[http::field::sec_websocket_key].empty())
    return text_response(400, "missing Sec-WebSocket-Key");

  const auto token = parse_bearer(std::string(request[http::field::authorization]));
  if (!door.admits(token, peer)) return unauthorized_response();
  const tcp protocol = stream.socket().local_endpoint().protocol();
  base::UniqueFd socket(stream.socket().release());
  const HandOver verdict = door.enter(*token, socket, upgrade_bytes(request, read_past), peer);
  if (verdict == HandOver::kDone) return std::nullopt;
  stream.socket().assign(protocol, socket.release());
  if (verdict == HandOver::kWorkerUnavailable)
    return text_response(503, "the computer's worker is restarting; dial again shortly");
  refuse_upgraded(stream.release_socket(), std::move(request), 4003,
                  "the VM secret was revoked or rotated");
  return std::nullopt;
}

}  // namespace sb::supervisor
