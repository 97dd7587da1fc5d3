// Opening a tunnel through an HTTP proxy on a connected stream (docs/connect.md, "Through
// a proxy"): TLS to an https:// proxy, then CONNECT to the target, the proxy's answer read
// within bounds. What a WebSocket to a switchboard or a pod then runs inside. For the
// programs that dial over TLS (sb_tls_client), as the stream may need it.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <boost/asio/ssl/context.hpp>
#include <chrono>
#include <string>

#include "shared/dial_target.hpp"
#include "shared/http_proxy.hpp"
#include "shared/tunnel_stream.hpp"

namespace sb {

// `stream`'s TCP is connected to `hop`'s proxy. Within `timeout`: TLS to the proxy when it
// is https:// (with `tls`, verified as any server is), then the CONNECT to `target` and
// its answer, at most kMaxProxyAnswerBytes, with nothing after it. "" once the tunnel is
// open, else what went wrong, naming the proxy and never its credentials.
boost::asio::awaitable<std::string> open_proxy_tunnel(TunnelStream& stream, const ProxyHop& hop,
                                                      const DialTarget& target,
                                                      boost::asio::ssl::context* tls,
                                                      std::chrono::steady_clock::duration timeout);

}  // namespace sb
