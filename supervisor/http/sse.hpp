// Server-sent events on a chunked response (docs/protocol.md, "Progress and event
// streams"): one event holds one JSON text, which may be written a part at a time.
#pragma once

#include <string>
#include <string_view>

namespace sb::supervisor {

inline constexpr std::string_view kEventOpening = "event: message\ndata: ";
inline constexpr std::string_view kLastChunk = "0\r\n\r\n";
// How long a caller whose stream ended before its response waits before it resumes it.
inline constexpr int kResumeAfterMs = 1000;

// An event's data, appended a part at a time: JSON strings cannot hold raw line breaks,
// so any in the text are whitespace between tokens, and each (CR, LF or CRLF, which may
// be split between two parts) starts a new data: line.
class EventData {
 public:
  void append(std::string& event, std::string_view part);

 private:
  bool after_cr_ = false;  // the last part ended with a CR, whose LF may start the next
};

// An event's first lines, up to its data: its id, when it has one, and its type.
std::string event_opening(std::string_view id);

// One event holding the JSON text `head` followed by `body`, with the id `id` unless empty.
std::string sse_event(std::string_view head, std::string_view body, std::string_view id = {});

// The event a resumable stream starts with (docs/protocol.md, "Resumable streams"): an id
// and no data, so that a caller cut off before anything else can still name where it was,
// and how long to wait before it comes back.
std::string priming_event(std::string_view id);

// Chunked framing (RFC 9112 §7.1): one line of hex and a CRLF each side.
std::string chunk(std::string_view data);

}  // namespace sb::supervisor
