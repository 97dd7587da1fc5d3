// A caller's socket as the writers of a response use it (plain_response.hpp,
// event_stream.hpp, arriving_reply.hpp): the stream, what keeps its owner alive while an
// operation on it is under way, and how long one write may take. Every write a writer
// starts takes `keep()` into its handler, so the stream outlives the operation, and is
// framed by begin_write() and end_write().
#pragma once

#include <boost/beast/core/tcp_stream.hpp>
#include <boost/system/error_code.hpp>
#include <chrono>
#include <memory>

#include "supervisor/metrics/metrics.hpp"

namespace sb::supervisor {

// Whether closing `socket` resets the connection, discarding whatever the kernel still
// holds to send, rather than ending it in order. A connection cut at a deadline is reset:
// closed in order, the kernel would keep it as an orphan with its unsent bytes, bounded by
// nothing (docs/robustness.md, "Connections and deadlines").
void reset_on_close(boost::asio::ip::tcp::socket& socket, bool reset);

struct Wire {
  boost::beast::tcp_stream& stream;
  std::weak_ptr<void> owner;  // the connection that owns the stream
  std::chrono::seconds write_timeout{30};
  Metrics* metrics = nullptr;  // where cuts are counted, if anywhere

  std::shared_ptr<void> keep() const { return owner.lock(); }

  // A write starts under its deadline; should the deadline cut it, the cut is a reset.
  void begin_write() const;
  // The write ended: a cut is counted; otherwise the socket closes in order again.
  void end_write(const boost::system::error_code& error) const;
};

}  // namespace sb::supervisor
