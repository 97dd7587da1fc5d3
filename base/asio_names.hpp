// The short names the project's Asio and Beast code writes (net::, beast::, http::,
// websocket::, ssl::, tcp, kAwait), declared once: a file says
// `using namespace sb::asio_names;` in its own namespace instead of its own alias block.
#pragma once

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/use_awaitable.hpp>

namespace boost::asio::ssl {}
namespace boost::beast::http {}
namespace boost::beast::websocket {}

namespace sb::asio_names {

namespace net = boost::asio;
namespace ssl = boost::asio::ssl;
namespace beast = boost::beast;
namespace http = boost::beast::http;
namespace websocket = boost::beast::websocket;
using tcp = boost::asio::ip::tcp;

// Completion token: an awaited operation yields its error code instead of throwing, so
// every failure is handled where it happens.
inline constexpr auto kAwait = net::as_tuple(net::use_awaitable);

}  // namespace sb::asio_names
