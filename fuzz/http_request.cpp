// Fuzz target: one HTTP connection's bytes, read as the supervisor's listener reads them
// (supervisor/http/request_reader.hpp): the head first, refuse_head on it, then the body, every
// failure mapped through status_for_read_error, and pipelined requests after a complete one.
//
// Input: one control byte, then the bytes the client sends.
//   control & 0x1f  how the bytes arrive: 0 all in one read, otherwise reads of varying
//                   sizes derived from it, so that a head, a chunk header or a CRLF splits
//                   across reads in every way
//   control & 0x40  small limits (head 200, body 32 bytes) instead of the server's, so that
//                   the limit paths are reachable with short inputs
#include <boost/asio/buffer.hpp>
#include <boost/beast/http/error.hpp>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "fuzz/fuzz_check.hpp"
#include "supervisor/http/request_reader.hpp"

namespace {

namespace http = boost::beast::http;
using boost::beast::error_code;
using sb::supervisor::RequestLimits;
using sb::supervisor::RequestParser;

// A keep-alive connection is read for at most this many requests: more adds no coverage.
constexpr int kMaxRequests = 8;

// Aborting rather than returning makes libFuzzer keep the input as a crash.
// The client's bytes as a socket hands them over, a read at a time.
class Wire {
 public:
  Wire(std::string_view bytes, std::uint8_t pattern) : bytes_(bytes), pattern_(pattern) {}

  // Appends one read's worth to `buffer`; false at the end of the stream.
  bool read(std::string& buffer) {
    if (bytes_.empty()) return false;
    std::size_t size = bytes_.size();
    if (pattern_ != 0) size = 1 + (pattern_ * 7 + reads_ * 13) % (pattern_ * 3 + 1);
    ++reads_;
    const auto piece = bytes_.substr(0, size);
    buffer.append(piece);
    bytes_.remove_prefix(piece.size());
    return true;
  }

 private:
  std::string_view bytes_;
  std::size_t pattern_;
  std::size_t reads_ = 0;
};

// Beast's read_some: parse what is buffered; when the parser needs more, read. At the end
// of the stream a parser that saw nothing reports end_of_stream, any other gets put_eof.
// `consumed` counts the bytes the parser took.
void read_some(RequestParser& parser, Wire& wire, std::string& buffer, error_code& error,
               std::size_t& consumed) {
  error = {};
  bool parse_first = !buffer.empty();
  for (;;) {
    if (parse_first) {
      const std::size_t used = parser.put(boost::asio::buffer(buffer), error);
      FUZZ_CHECK(used <= buffer.size());
      buffer.erase(0, used);
      consumed += used;
      if (error != http::error::need_more) return;
      error = {};
    }
    parse_first = true;
    if (!wire.read(buffer)) {
      if (parser.got_some()) {
        parser.put_eof(error);
      } else {
        error = http::error::end_of_stream;
      }
      return;
    }
  }
}

bool is_answer_status(int status) {
  return status == 400 || status == 413 || status == 431;
}

// One request off the connection; false when the connection ends with it.
bool read_request(Wire& wire, std::string& buffer, const RequestLimits& limits) {
  RequestParser parser;
  sb::supervisor::limit_request(parser, limits);
  error_code error;
  std::size_t consumed = 0;

  // async_read_header
  parser.eager(false);
  while (!error && !parser.is_header_done()) read_some(parser, wire, buffer, error, consumed);
  if (error) {
    const auto status = sb::supervisor::status_for_read_error(error);
    FUZZ_CHECK(!status || is_answer_status(*status));
    return false;
  }
  // Beast applies header_limit to the request line and to the fields each on its own, so
  // it reads a head of up to twice max_head_bytes (docs/robustness.md, "Fuzzing"), never
  // more; the server refuses any over the limit itself (431).
  FUZZ_CHECK(consumed <= 2 * std::size_t{limits.max_head_bytes});
  if (sb::supervisor::head_over_limit(consumed, limits)) return false;
  if (const auto status = sb::supervisor::refuse_head(parser)) {
    FUZZ_CHECK(*status == 501);
    return false;
  }

  // async_read of the rest
  parser.eager(true);
  while (!error && !parser.is_done()) read_some(parser, wire, buffer, error, consumed);
  if (error) {
    const auto status = sb::supervisor::status_for_read_error(error);
    FUZZ_CHECK(!status || is_answer_status(*status));
    return false;
  }

  const auto& request = parser.get();
  FUZZ_CHECK(request.body().size() <= limits.max_body_bytes);
  if (const auto length = parser.content_length()) FUZZ_CHECK(request.body().size() == *length);
  FUZZ_CHECK(!request.target().empty());
  // A request whose body was declared by chunks has nothing left to decode: had another
  // coding been listed, refuse_head would have refused it.
  if (parser.chunked()) FUZZ_CHECK(!sb::supervisor::refuse_head(parser));
  return parser.keep_alive();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::uint8_t control = data[0];
  const std::string_view bytes(reinterpret_cast<const char*>(data + 1), size - 1);

  RequestLimits limits;  // the server's own
  if (control & 0x40) limits = RequestLimits{.max_head_bytes = 200, .max_body_bytes = 32};

  Wire wire(bytes, control & 0x1f);
  std::string buffer;  // bytes read past one request belong to the next, as on a socket
  for (int count = 0; count < kMaxRequests; ++count) {
    if (!read_request(wire, buffer, limits)) break;
  }
  return 0;
}
