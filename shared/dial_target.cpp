#include "shared/dial_target.hpp"

#include <algorithm>
#include <cctype>

#include <boost/url/parse.hpp>
#include <boost/url/url_view.hpp>

#include "shared/text.hpp"

namespace sb {
namespace {

namespace urls = boost::urls;

// Appended piece by piece: g++ 12 warns falsely (-Wrestrict) on "\"" + text + "\"".
std::string quoted(std::string_view url) {
  std::string out("\"");
  out.append(url).append("\"");
  return out;
}

}  // namespace

bool has_url_shape(std::string_view url) {
  for (const char c : url) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte <= 0x20 || byte >= 0x7f) return false;
  }
  const auto colon = url.find("://");
  if (colon == std::string_view::npos || colon == 0 ||
      !std::isalpha(static_cast<unsigned char>(url.front())))
    return false;
  return std::all_of(url.begin(), url.begin() + static_cast<long>(colon), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '+' || c == '-' || c == '.';
  });
}

std::variant<DialTarget, std::string> parse_dial_target(std::string_view url, UrlKind kind) {
  if (!has_url_shape(url)) {
    const bool printable = std::all_of(url.begin(), url.end(), [](char c) {
      return static_cast<unsigned char>(c) >= 0x20 && static_cast<unsigned char>(c) < 0x7f;
    });
    // What is not printable is not repeated.
    if (!printable) return "that is not a URL: it holds a byte outside printable ASCII";
    const auto colon = url.find(':');
    const bool scheme_only =
        colon != std::string_view::npos && colon > 0 && url.find(' ') == std::string_view::npos;
    return quoted(url) + (scheme_only ? " has no host" : " is not a URL");
  }
  const auto parsed = urls::parse_uri(url);
  if (!parsed) return quoted(url) + " is not a URL";
  const urls::url_view& view = *parsed;
  DialTarget out;
  const bool web_socket = kind == UrlKind::kWebSocket;
  if (view.scheme_id() == (web_socket ? urls::scheme::wss : urls::scheme::https)) {
    out.tls = true;
  } else if (view.scheme_id() != (web_socket ? urls::scheme::ws : urls::scheme::http)) {
    return quoted(url) + (web_socket ? " is not ws:// or wss://" : " is not http:// or https://");
  }
  if (!view.has_authority() || view.encoded_host().empty()) return quoted(url) + " has no host";
  if (view.has_userinfo())
    return quoted(url) + " carries user info; a secret goes in a file, never in a URL";
  if (view.has_fragment()) return quoted(url) + " has a fragment, which is never sent";
  switch (view.host_type()) {
    case urls::host_type::ipv4:
      out.host = view.host_ipv4_address().to_string();
      out.loopback = view.host_ipv4_address().is_loopback();
      break;
    case urls::host_type::ipv6:
      out.host = view.host_ipv6_address().to_string();
      out.loopback = view.host_ipv6_address().is_loopback();
      break;
    case urls::host_type::name:
      if (view.encoded_host().find('%') != std::string_view::npos)
        return quoted(url) + " has a percent-encoded host";
      out.host = ascii_lowercase(view.encoded_host());
      out.loopback = out.host == "localhost";
      break;
    default:
      return quoted(url) + " has a host of a form that cannot be dialled";
  }
  if (view.has_port()) {
    const std::string_view port = view.port();
    if (!all_digits(port) || port.size() > 5 || std::stoi(std::string(port)) == 0 ||
        std::stoi(std::string(port)) > 65535)
      return quoted(url) + " has a port outside 1-65535";
    out.port = std::string(port);
  } else {
    out.port = out.tls ? "443" : "80";
  }
  const bool bracketed = view.host_type() == urls::host_type::ipv6;
  if (bracketed) out.host_header.append("[");
  out.host_header.append(out.host);
  if (bracketed) out.host_header.append("]");
  if (view.has_port()) out.host_header.append(":").append(out.port);
  // A target always starts with "/" ("ws://host?x" asks for "/?x").
  const std::string_view target = view.encoded_target();
  out.target.reserve(target.size() + 1);
  if (!target.starts_with('/')) out.target.push_back('/');
  out.target.append(target.data(), target.size());
  return out;
}

}  // namespace sb
