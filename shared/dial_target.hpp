// A URL to dial (ws:// or wss://; http:// or https:// for switchboard-connect's upstream),
// parsed once (with Boost.URL) where it is configured, so that what policy checks
// (loopback, TLS) is exactly what the dialer connects to.
#pragma once

#include <string>
#include <string_view>
#include <variant>

namespace sb {

struct DialTarget {
  bool tls = false;         // wss or https
  std::string host;         // lowercased; an IPv6 address without brackets
  std::string port;         // as given, or 443 / 80
  std::string host_header;  // what Host says: the host (IPv6 in brackets) and a given port
  std::string target;       // path and query, "/" when the URL has none
  bool loopback = false;    // localhost, 127.0.0.0/8 or ::1
  // One session written two ways (case, a default port written out) is one target: the
  // same connection asking for the same resource.
  bool operator==(const DialTarget& other) const {
    return tls == other.tls && host == other.host && port == other.port && target == other.target;
  }
};

// The target, or what is wrong with the URL in a sentence that names it. Refused: a
// scheme other than `kind`'s, no host, user info (a secret goes in a file, never in a URL),
// a fragment, a port outside 1-65535, a percent-encoded or future-format host.
// `kind`: which schemes are accepted, ws:// and wss:// or http:// and https:// (`tls`
// says which of the two).
enum class UrlKind { kWebSocket, kHttp };
// Whether `url` has the form every URL dialled here has, before a parser sees it: a
// scheme, then "//" and an authority, in printable ASCII without spaces. Boost.URL 1.81's
// parser asserts on some URLs without an authority (`x:#`, `x:` then a byte over 0x7f),
// so nothing else is handed to it.
bool has_url_shape(std::string_view url);
std::variant<DialTarget, std::string> parse_dial_target(std::string_view url,
                                                        UrlKind kind = UrlKind::kWebSocket);

}  // namespace sb
