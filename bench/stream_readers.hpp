// Event streams held open on a switchboard and read as fast as they come, on a thread of
// their own: the listening callers of the fan-out (fanout_phase.cpp). Each is a GET
// /mcp/<computer> in 2025-11-25 with an MCP session of its own; everything after its head is
// read and thrown away but for a count of one message's occurrences in it.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "harness/raw_socket.hpp"

namespace sbbench {

class StreamReaders {
 public:
  // Opens `count` streams, each past its 200 head, and starts reading; throws when one is
  // refused or does not answer.
  StreamReaders(int port, const std::string& token, const std::string& computer, int count,
                std::string counted_text);
  ~StreamReaders();
  StreamReaders(const StreamReaders&) = delete;
  StreamReaders& operator=(const StreamReaders&) = delete;

  // Occurrences of the counted text, over every stream so far.
  long counted() const { return counted_.load(); }
  // Streams the switchboard has not ended.
  int open() const { return open_.load(); }

 private:
  struct Stream {
    std::unique_ptr<harness::RawSocket> socket;
    bool ended = false;  // by the switchboard
    std::string carry;   // the end of the last read, where the text may have begun
  };
  void read_all();
  void read_one(Stream& stream, std::vector<char>& buffer);
  void count_in(Stream& stream, const char* data, std::size_t size);

  std::string counted_text_;
  std::vector<Stream> streams_;
  std::atomic<long> counted_{0};
  std::atomic<int> open_{0};
  std::atomic<bool> stopping_{false};
  std::thread thread_;
};

}  // namespace sbbench
