#include "supervisor/http/response_head.hpp"

#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/http/message.hpp>

namespace sb::supervisor {

namespace http = boost::beast::http;

// Beast's fields set the framing headers exactly as its serializer would; the text is
// composed here rather than through an ostream, once per response.
std::string head_text(const HttpResponse& response, const Framing& framing,
                      std::optional<std::size_t> content_length) {
  http::response<http::empty_body> head;
  head.result(static_cast<http::status>(response.status));
  head.version(11);
  // Each as listed: a name may come twice (two WWW-Authenticate challenges, RFC 9110 §11.6.1).
  for (const auto& [name, value] : response.headers) head.insert(name, value);
  for (const auto& [name, value] : framing.cors) head.set(name, value);
  head.keep_alive(framing.keep_alive);
  if (content_length) {
    head.content_length(*content_length);
  } else {
    head.chunked(true);
  }
  std::string text = "HTTP/1.1 ";
  text += std::to_string(response.status);
  text += ' ';
  const auto reason = http::obsolete_reason(head.result());
  text.append(reason.data(), reason.size());
  text += "\r\n";
  for (const auto& field : head) {
    text.append(field.name_string().data(), field.name_string().size());
    text += ": ";
    text.append(field.value().data(), field.value().size());
    text += "\r\n";
  }
  text += "\r\n";
  return text;
}

}  // namespace sb::supervisor
