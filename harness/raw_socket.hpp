// A TCP client that sends exactly the bytes a test gives it, for what a well-behaved HTTP
// client never does: malformed heads, pipelining without reading, half-closing, sending a
// whole oversized body before reading. Every wait is bounded.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

namespace harness {

class RawSocket {
 public:
  // Connects to 127.0.0.1:`port`. `receive_buffer` (bytes) is set before connecting, to
  // make a reader that falls behind quickly.
  explicit RawSocket(int port, std::optional<int> receive_buffer = {});
  ~RawSocket();
  RawSocket(const RawSocket&) = delete;
  RawSocket& operator=(const RawSocket&) = delete;

  // Sends every byte, waiting for room as needed; false when the peer closed or reset the
  // connection, or `timeout` passed first.
  bool send_all(std::string_view bytes,
                std::chrono::milliseconds timeout = std::chrono::seconds(10));
  // Sends `bytes` over and over until the connection fails (true) or `timeout` passes with
  // it still open (false): a client that writes and never reads.
  bool send_until_refused(std::string_view bytes, std::chrono::milliseconds timeout);
  void shutdown_write();
  // Reads until `needle` has arrived (true) or `timeout` passes or the peer ends the
  // connection (false); what was read stays available to read_to_end().
  bool read_until(std::string_view needle,
                  std::chrono::milliseconds timeout = std::chrono::seconds(10));
  // Reads until the peer ends the connection (or resets it) or `timeout` passes; returns
  // everything read.
  std::string read_to_end(std::chrono::milliseconds timeout = std::chrono::seconds(10));
  // Whether the peer ended the connection within `timeout` (bytes read meanwhile are
  // dropped).
  bool closed_by_peer(std::chrono::milliseconds timeout);
  // What read_until() has read and not yet returned; it is returned only once.
  std::string take_read();
  // The socket, for a reader that polls many at once; it stays this object's.
  int fd() const { return fd_; }

 private:
  int fd_ = -1;
  std::string read_;  // read by read_until(), not yet returned
};

// The status code of the first response in `bytes` that is not informational (1xx), or
// nothing.
std::optional<int> final_status(std::string_view bytes);

}  // namespace harness
