#include "supervisor/http/request_reader.hpp"

#include <boost/beast/core/string.hpp>

namespace sb::supervisor {

namespace http = boost::beast::http;

void limit_request(RequestParser& parser, const RequestLimits& limits) {
  parser.header_limit(limits.max_head_bytes);
  parser.body_limit(limits.max_body_bytes);
}

std::optional<int> refuse_head(const RequestParser& parser) {
  const auto& request = parser.get();
  const auto coding = request.find(http::field::transfer_encoding);
  if (coding == request.end()) return std::nullopt;
  // Beast decodes "chunked" only; a body under any other coding would reach the routes
  // still encoded, so it is refused rather than misread.
  if (!boost::beast::iequals(coding->value(), "chunked")) return 501;
  return std::nullopt;
}

bool head_over_limit(std::size_t head_bytes, const RequestLimits& limits) {
  return head_bytes > limits.max_head_bytes;
}

std::optional<int> status_for_read_error(boost::beast::error_code error) {
  if (error.category() != http::make_error_code(http::error::bad_method).category())
    return std::nullopt;
  switch (static_cast<http::error>(error.value())) {
    case http::error::header_limit:
      return 431;
    case http::error::body_limit:
      return 413;
    case http::error::bad_line_ending:
    case http::error::bad_method:
    case http::error::bad_target:
    case http::error::bad_version:
    case http::error::bad_field:
    case http::error::bad_value:
    case http::error::bad_content_length:
    case http::error::bad_transfer_encoding:
    case http::error::bad_chunk:
    case http::error::bad_chunk_extension:
    case http::error::bad_obs_fold:
    case http::error::multiple_content_length:
      return 400;
    default:  // end of stream, a partial message: the caller left
      return std::nullopt;
  }
}

std::string partial_head(const RequestParser& parser, std::string_view unparsed) {
  const Request& head = parser.get();
  if (head.target().empty()) return std::string(unparsed);  // no request line yet
  const auto text = [](boost::beast::string_view view) {
    return std::string_view(view.data(), view.size());
  };
  std::string bytes(text(head.method_string()));
  bytes += ' ';
  bytes += text(head.target());
  bytes += " HTTP/";
  bytes += std::to_string(head.version() / 10);
  bytes += '.';
  bytes += std::to_string(head.version() % 10);
  bytes += "\r\n";
  for (const auto& field : head) {
    bytes += text(field.name_string());
    bytes += ": ";
    bytes += text(field.value());
    bytes += "\r\n";
  }
  bytes += unparsed;
  return bytes;
}

}  // namespace sb::supervisor
