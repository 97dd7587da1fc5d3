// How the listener reads one HTTP request, in one place so that the server and its fuzz
// target (fuzz/http_request.cpp) parse exactly alike: the limits on the head and the body,
// which transfer codings are refused, and the status each failure is answered with
// (docs/robustness.md, "HTTP errors").
#pragma once

#include <boost/beast/http/error.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/string_body.hpp>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace sb::supervisor {

using Request = boost::beast::http::request<boost::beast::http::string_body>;
using RequestParser = boost::beast::http::request_parser<boost::beast::http::string_body>;

struct RequestLimits {
  std::uint32_t max_head_bytes = 8 * 1024;
  std::uint64_t max_body_bytes = 1024 * 1024;
};

// A parser for one request, its limits set.
void limit_request(RequestParser& parser, const RequestLimits& limits);

// After the head: a status when the request must be refused before its body is read
// (501 for a transfer coding other than plain "chunked").
std::optional<int> refuse_head(const RequestParser& parser);

// Beast bounds the request line and the header fields each by the head limit, not the two
// together (a head of almost twice the limit parses); `head_bytes`, what the parser took
// for the head, is checked against the limit here.
bool head_over_limit(std::size_t head_bytes, const RequestLimits& limits);

// The status that answers a failed read: 431, 413, or 400 for a malformed request. Nothing
// for failures that are not the request's fault (a timeout, a reset, end of stream).
std::optional<int> status_for_read_error(boost::beast::error_code error);

// The bytes of a head not yet whole, as the caller sent them but for spacing, for another
// process to read again: the parser takes the request line and each field once it has come
// whole, and `unparsed`, the rest of what was read, follows them.
std::string partial_head(const RequestParser& parser, std::string_view unparsed);

}  // namespace sb::supervisor
