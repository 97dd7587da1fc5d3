// A caller's socket as the writers of a response use it (plain_response.hpp,
// event_stream.hpp, arriving_reply.hpp): the stream, what keeps its owner alive while an
// operation on it is under way, and how long one write may take. Every write a writer
// starts takes `keep()` into its handler, so the stream outlives the operation.
#pragma once

#include <boost/beast/core/tcp_stream.hpp>
#include <chrono>
#include <memory>

namespace sb::supervisor {

struct Wire {
  boost::beast::tcp_stream& stream;
  std::weak_ptr<void> owner;  // the connection that owns the stream
  std::chrono::seconds write_timeout{30};

  std::shared_ptr<void> keep() const { return owner.lock(); }
};

}  // namespace sb::supervisor
