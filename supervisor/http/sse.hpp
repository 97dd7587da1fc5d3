// Server-sent events on a chunked response (docs/protocol.md, "Progress and event
// streams"): one event holds one JSON text, which may be written a part at a time.
#pragma once

#include <string>
#include <string_view>

namespace sb::supervisor {

inline constexpr std::string_view kEventOpening = "event: message\ndata: ";
inline constexpr std::string_view kLastChunk = "0\r\n\r\n";

// An event's data, appended a part at a time: JSON strings cannot hold raw line breaks,
// so any in the text are whitespace between tokens, and each (CR, LF or CRLF, which may
// be split between two parts) starts a new data: line.
class EventData {
 public:
  void append(std::string& event, std::string_view part);

 private:
  bool after_cr_ = false;  // the last part ended with a CR, whose LF may start the next
};

// One event holding the JSON text `head` followed by `body`.
std::string sse_event(std::string_view head, std::string_view body);

// Chunked framing (RFC 9112 §7.1): one line of hex and a CRLF each side.
std::string chunk(std::string_view data);

}  // namespace sb::supervisor
