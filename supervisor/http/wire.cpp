#include "supervisor/http/wire.hpp"

#include <boost/asio/socket_base.hpp>
#include <boost/beast/core/error.hpp>

namespace sb::supervisor {

void reset_on_close(boost::asio::ip::tcp::socket& socket, bool reset) {
  boost::system::error_code ignored;  // a socket already closed has nothing to keep
  socket.set_option(boost::asio::socket_base::linger(reset, 0), ignored);
}

void Wire::begin_write() const {
  reset_on_close(stream.socket(), true);
  stream.expires_after(write_timeout);
}

void Wire::end_write(const boost::system::error_code& error) const {
  if (error == boost::beast::error::timeout) {
    // The stream closed the socket at the deadline, as a reset.
    if (metrics) metrics->connection_cut(kCutAtWriteDeadline);
    return;
  }
  reset_on_close(stream.socket(), false);
}

}  // namespace sb::supervisor
