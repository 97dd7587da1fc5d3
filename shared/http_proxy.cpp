#include "shared/http_proxy.hpp"

#include <openssl/evp.h>

#include <boost/asio/ip/address.hpp>
#include <boost/url/parse.hpp>
#include <boost/url/url_view.hpp>
#include <cstdlib>
#include <vector>

#include "shared/secret_file.hpp"
#include "shared/text.hpp"

namespace sb {
namespace {

namespace urls = boost::urls;

std::string variable(const char* name) {
  const char* value = std::getenv(name);
  return value ? std::string(value) : std::string();
}

std::string first_set(const char* one, const char* other) {
  std::string value = variable(one);
  return value.empty() ? variable(other) : value;
}

// A proxy's URL: http(s)://[user:password@]host[:port][/], port 1080 for http:// and 443
// for https:// when none is given (as curl has it). `credentials` gets the user info,
// percent-decoded, when there is some; what is wrong is said without the URL.
std::variant<DialTarget, std::string> parse_proxy_url(std::string_view url,
                                                      std::string& credentials) {
  if (!has_url_shape(url)) return std::string("not a URL");
  const auto parsed = urls::parse_uri(url);
  if (!parsed) return std::string("not a URL");
  const urls::url_view& view = *parsed;
  const bool tls = view.scheme_id() == urls::scheme::https;
  if (!tls && view.scheme_id() != urls::scheme::http)
    return std::string("only an http:// or https:// proxy is supported");
  if (view.has_userinfo()) {
    credentials = view.user();
    credentials += ':';
    credentials += view.password();
  }
  if ((!view.encoded_path().empty() && view.encoded_path() != "/") || view.has_query() ||
      view.has_fragment())
    return std::string("a proxy's URL names no path");
  const std::string port =
      view.has_port() ? std::string(view.port()) : std::string(tls ? "443" : "1080");
  std::string bare =
      std::string(tls ? "https://" : "http://") + std::string(view.encoded_host_and_port());
  if (!view.has_port()) bare += ":" + port;
  auto target = parse_dial_target(bare, UrlKind::kHttp);
  if (std::holds_alternative<std::string>(target)) return std::string("no usable host and port");
  return std::get<DialTarget>(target);
}

std::vector<unsigned char> bytes_of(const boost::asio::ip::address& address) {
  if (address.is_v4()) {
    const auto bytes = address.to_v4().to_bytes();
    return {bytes.begin(), bytes.end()};
  }
  const auto bytes = address.to_v6().to_bytes();
  return {bytes.begin(), bytes.end()};
}

// Whether `address` is inside `range` (address/bits, of the same family).
bool in_range(std::string_view range, const boost::asio::ip::address& address) {
  const auto slash = range.find('/');
  boost::system::error_code bad;
  const auto network = boost::asio::ip::make_address(std::string(range.substr(0, slash)), bad);
  const std::string_view bits_text = range.substr(slash + 1);
  if (bad || bits_text.empty() || bits_text.size() > 3 || !all_digits(bits_text) ||
      network.is_v4() != address.is_v4())
    return false;
  const auto want = bytes_of(network);
  const auto have = bytes_of(address);
  const std::size_t bits = std::stoul(std::string(bits_text));
  if (bits > want.size() * 8) return false;
  for (std::size_t bit = 0; bit < bits; ++bit) {
    const int mask = 0x80 >> (bit % 8);
    if ((want[bit / 8] & mask) != (have[bit / 8] & mask)) return false;
  }
  return true;
}

// Whether `entry` (one NO_PROXY item, without a port) names `host`: everything, an
// address or a range it is in, or a domain it is or is under (on a label boundary).
bool names_host(std::string_view entry, std::string_view host) {
  if (entry == "*") return true;
  boost::system::error_code not_an_address;
  const auto address = boost::asio::ip::make_address(std::string(host), not_an_address);
  if (!not_an_address && entry.find('/') != std::string_view::npos) return in_range(entry, address);
  if (entry.front() == '.') entry.remove_prefix(1);
  if (entry.empty()) return false;
  if (!not_an_address) {
    boost::system::error_code bad_entry;
    const auto named = boost::asio::ip::make_address(std::string(entry), bad_entry);
    return !bad_entry && named == address;
  }
  if (host.size() < entry.size()) return false;
  if (host.substr(host.size() - entry.size()) != ascii_lowercase(entry)) return false;
  return host.size() == entry.size() || host[host.size() - entry.size() - 1] == '.';
}

}  // namespace

ProxyEnvironment proxy_environment() {
  return ProxyEnvironment{.https_proxy = first_set("https_proxy", "HTTPS_PROXY"),
                          .http_proxy = variable("http_proxy"),
                          .all_proxy = first_set("ALL_PROXY", "all_proxy"),
                          .no_proxy = first_set("NO_PROXY", "no_proxy")};
}

bool no_proxy_names(std::string_view list, const DialTarget& target) {
  while (!list.empty()) {
    const auto comma = list.find(',');
    std::string_view entry = trim(list.substr(0, comma));
    list = comma == std::string_view::npos ? std::string_view() : list.substr(comma + 1);
    if (entry.empty()) continue;
    // A port after the host: the last colon, unless it is inside a bare IPv6 address.
    std::string_view port;
    if (entry.front() == '[') {
      const auto close = entry.find(']');
      if (close == std::string_view::npos) continue;
      if (close + 1 < entry.size() && entry[close + 1] == ':') port = entry.substr(close + 2);
      entry = entry.substr(1, close - 1);
    } else if (entry.find(':') == entry.rfind(':') && entry.find(':') != std::string_view::npos) {
      port = entry.substr(entry.find(':') + 1);
      entry = entry.substr(0, entry.find(':'));
    }
    if (!port.empty() && port != target.port) continue;
    if (names_host(entry, target.host)) return true;
  }
  return false;
}

std::variant<std::optional<ProxyRoute>, std::string> route_for(
    const DialTarget& target, const std::string& configured, const ProxyEnvironment& environment,
    const std::filesystem::path& credentials_file) {
  std::string url = configured;
  const bool from_environment = url.empty();
  if (from_environment) {
    if (target.loopback || no_proxy_names(environment.no_proxy, target)) return std::nullopt;
    url = target.tls ? environment.https_proxy : environment.http_proxy;
    if (url.empty()) url = environment.all_proxy;
    if (url.empty()) return std::nullopt;
  }
  std::string credentials;
  auto proxy = parse_proxy_url(url, credentials);
  // What is wrong is said without the URL, which may hold a password.
  if (auto* problem = std::get_if<std::string>(&proxy))
    return (from_environment ? "the proxy the environment names: " : "the proxy: ") + *problem;
  if (!from_environment && !credentials.empty())
    return std::string(
        "the proxy's URL takes no user name or password: give them in the proxy credentials "
        "file");
  const DialTarget& where = std::get<DialTarget>(proxy);
  return std::optional<ProxyRoute>(
      ProxyRoute{.url = (where.tls ? "https://" : "http://") + where.host_header,
                 .proxy = where,
                 .credentials = std::move(credentials),
                 .credentials_file = credentials_file});
}

std::string basic_authorization(std::string_view credentials) {
  std::string encoded(4 * ((credentials.size() + 2) / 3), '\0');
  const int written = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(encoded.data()),
                                      reinterpret_cast<const unsigned char*>(credentials.data()),
                                      static_cast<int>(credentials.size()));
  encoded.resize(written > 0 ? static_cast<std::size_t>(written) : 0);
  return "Basic " + encoded;
}

std::string connect_request(const DialTarget& target, std::string_view authorization) {
  // The authority is the host (an IPv6 address in brackets) and the port, always given.
  const bool v6 = target.host.find(':') != std::string::npos;
  std::string authority = v6 ? "[" + target.host + "]" : target.host;
  authority += ":" + target.port;
  std::string request = "CONNECT " + authority + " HTTP/1.1\r\nHost: " + authority + "\r\n";
  if (!authorization.empty()) {
    request += "Proxy-Authorization: ";
    request += authorization;
    request += "\r\n";
  }
  request += "\r\n";
  return request;
}

std::string tunnel_refusal(std::string_view head, bool sent_credentials) {
  const auto line_end = head.find("\r\n");
  const std::string_view line = head.substr(0, line_end);
  // HTTP/1.x SSS reason
  if (line.size() < 12 || !line.starts_with("HTTP/1.") || line[8] != ' ' ||
      !all_digits(line.substr(9, 3)))
    return "the proxy's answer to CONNECT is not HTTP";
  const int status = std::atoi(std::string(line.substr(9, 3)).c_str());
  if (status >= 200 && status < 300) return {};
  // 407 is the standard's answer; some proxies (tinyproxy) refuse wrong credentials 401.
  if (status == 407 || (status == 401 && sent_credentials))
    return sent_credentials ? "the proxy refused its credentials (" + std::to_string(status) + ")"
                            : "the proxy asks for credentials (407): give them in "
                              "--proxy-credentials-file";
  // The proxy's words go into a log line: printable ASCII only, and not many of them.
  std::string reason;
  for (const char c : trim(line.substr(std::min<std::size_t>(12, line.size())))) {
    if (reason.size() == 80) break;
    reason += (c >= 0x20 && c < 0x7f) ? c : '?';
  }
  return "the proxy refused the tunnel: " + std::to_string(status) +
         (reason.empty() ? "" : " " + reason);
}

std::optional<ProxyHop> proxy_hop(const ProxyRoute& route, std::string& problem) {
  std::string credentials = route.credentials;
  if (!route.credentials_file.empty()) {
    std::string error;
    std::optional<std::string> read = read_secret(route.credentials_file, error);
    if (!read || read->find(':') == std::string::npos) {
      problem = read ? "proxy_credentials_file " + route.credentials_file.string() +
                           " holds no user:password"
                     : error;
      return std::nullopt;
    }
    credentials = std::move(*read);
  }
  return ProxyHop{.proxy = route.proxy,
                  .authorization = credentials.empty() ? "" : basic_authorization(credentials)};
}

}  // namespace sb
