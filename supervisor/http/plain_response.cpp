#include "supervisor/http/plain_response.hpp"

#include <array>
#include <boost/asio/write.hpp>
#include <memory>

namespace sb::supervisor {

void write_plain_response(const Wire& wire, HttpResponse response, const Framing& framing,
                          std::function<void(bool ok)> written) {
  struct Pending {
    std::string head;
    HttpResponse response;
  };
  const std::size_t length = response.body_head.size() + response.body.size();
  auto pending =
      std::make_shared<Pending>(Pending{head_text(response, framing, length), std::move(response)});
  if (framing.head_only) {
    pending->response.body_head.clear();
    pending->response.body.clear();
  }
  const std::array<boost::asio::const_buffer, 3> buffers{
      boost::asio::buffer(pending->head), boost::asio::buffer(pending->response.body_head),
      boost::asio::buffer(pending->response.body)};
  wire.begin_write();
  boost::asio::async_write(wire.stream, buffers,
                           [wire, keep = wire.keep(), pending, written = std::move(written)](
                               const boost::system::error_code& error, std::size_t) {
                             wire.end_write(error);
                             written(!error);
                           });
}

}  // namespace sb::supervisor
