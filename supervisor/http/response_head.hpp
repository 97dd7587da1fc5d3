// A response's head as a connection sends it: the response's status and fields, the CORS
// headers of the request's origin, whether the connection stays open, and the body's
// length or chunked framing (for an event stream).
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "supervisor/http/types.hpp"

namespace sb::supervisor {

// An interim response: what clients such as curl wait for before they send a larger body,
// and what a client must skip (RFC 9110 §15.2), which makes it the hang-up watch's probe.
inline constexpr std::string_view kContinueHead = "HTTP/1.1 100 Continue\r\n\r\n";

// How one request's responses are framed.
struct Framing {
  std::vector<std::pair<std::string, std::string>> cors;  // none for a request without origin
  bool keep_alive = true;
  bool head_only = false;  // a HEAD request: the head alone
};

// The head as text, ready to be written. `content_length` nothing: chunked.
std::string head_text(const HttpResponse& response, const Framing& framing,
                      std::optional<std::size_t> content_length);

}  // namespace sb::supervisor
