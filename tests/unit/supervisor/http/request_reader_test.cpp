// Reading one request as the listener does (supervisor/http/request_reader.hpp), the bytes
// handed to the parser in the pieces a socket may deliver them in.
#include "supervisor/http/request_reader.hpp"

#include <gtest/gtest.h>

#include <boost/asio/buffer.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace sb::supervisor {
namespace {

namespace http = boost::beast::http;

// Feeds `pieces` one after another as a reader does: what the parser leaves stays buffered
// and is offered again with the next piece. The error of the last put.
boost::beast::error_code read_in_pieces(RequestParser& parser,
                                        const std::vector<std::string_view>& pieces) {
  std::string buffered;
  boost::beast::error_code error;
  for (const auto piece : pieces) {
    buffered.append(piece);
    const auto used = parser.put(boost::asio::buffer(buffered), error);
    buffered.erase(0, used);
    if (error && error != http::error::need_more) return error;
  }
  return error;
}

// Beast 1.81 asserted wrongly here, and so stopped any build that checks its assertions
// (base/boost_assert.cpp).
TEST(RequestReader, AnEmptyChunkedBodyWhoseEndComesAByteAtATimeIsRead) {
  RequestParser parser;
  limit_request(parser, RequestLimits{});
  const auto error = read_in_pieces(
      parser,
      {"POST /mcp HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n", "0\r\n", "\r", "\n"});
  EXPECT_FALSE(error) << error.message();
  ASSERT_TRUE(parser.is_done());
  EXPECT_EQ(parser.get().body(), "");
}

}  // namespace
}  // namespace sb::supervisor
