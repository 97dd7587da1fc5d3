// Fuzz target: the IPC frame decoder. The header checks and the reassembly of frames live in
// ipc::Channel's private read path, so the bytes go through a real Channel (a worker's end,
// which takes descriptors) as its peer would write them; every meta of a delivered frame
// then goes through the meta decoders of ipc/messages.hpp, and every whole frame through
// its type's codec (ipc/supervisor_frames.hpp, ipc/worker_frames.hpp): what decodes must
// encode back to the very same frame.
//
// Input: one control byte, then the bytes written to the channel's frame socket.
//   control & 0x1f  how the bytes are written: 0 all at once, otherwise in writes of
//                   varying sizes derived from it, the channel reading between them
//   control >> 5    descriptors (0..7) sent ahead on the descriptor socket, one per message,
//                   for the frames that declare one
//
// The channel is held to the wire format (ipc/frame.hpp) as modelled here: it delivers
// exactly the complete, well-formed frames at the start of the stream, byte for byte and in
// order, and closes at the first malformed one or at the end of the stream. Frames with an
// odd call id and a body of 16 bytes or more are handed over at their meta
// (Channel::hand_over_large_bodies): their body arrives whole, or, for one cut off by the
// end of the stream, fails after exactly the bytes that were there.
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <boost/asio/io_context.hpp>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <type_traits>
#include <variant>
#include <vector>

#include "fuzz/fuzz_check.hpp"
#include "ipc/channel.hpp"
#include "ipc/messages.hpp"
#include "ipc/supervisor_frames.hpp"
#include "ipc/worker_frames.hpp"

namespace {

using namespace sb::ipc;

constexpr std::size_t kHandOverFrom = 16;

bool handed_over(const WireHeader& header) {
  return header.call_id % 2 == 1 && header.body_size >= kHandOverFrom && !header.has_fd;
}

struct Expected {
  FrameType type{};
  std::uint64_t call_id = 0;
  std::string meta;
  std::string body;
  bool fd = false;
  bool cut_off = false;  // handed over, then the stream ended inside its body
  bool handed = false;   // handed over at its meta
};

// The frames a correct reader delivers from `bytes`, with `fds` descriptors at hand.
std::vector<Expected> expected_frames(std::string_view bytes, std::size_t fds) {
  std::vector<Expected> frames;
  while (bytes.size() >= sizeof(WireHeader)) {
    WireHeader header;
    std::memcpy(&header, bytes.data(), sizeof header);
    if (header.meta_size > kMaxMetaSize || header.body_size > kMaxBodySize) break;
    if (header.reserved != 0 || header.has_fd > 1) break;
    const std::size_t payload = std::size_t{header.meta_size} + header.body_size;
    const std::size_t available = bytes.size() - sizeof header;
    if (available < payload) {
      if (handed_over(header) && available >= header.meta_size) {
        frames.push_back({static_cast<FrameType>(header.type), header.call_id,
                          std::string(bytes.substr(sizeof header, header.meta_size)),
                          std::string(bytes.substr(sizeof header + header.meta_size)), false, true,
                          true});
      }
      break;
    }
    if (header.has_fd) {
      if (fds == 0) break;
      --fds;
    }
    bytes.remove_prefix(sizeof header);
    frames.push_back({static_cast<FrameType>(header.type), header.call_id,
                      std::string(bytes.substr(0, header.meta_size)),
                      std::string(bytes.substr(header.meta_size, header.body_size)),
                      header.has_fd != 0, false, handed_over(header)});
    bytes.remove_prefix(payload);
  }
  return frames;
}

// Writes `bytes` to the non-blocking `fd`, with `fds` descriptors if any. Returns how many
// bytes went out.
std::size_t write_some(int fd, std::string_view bytes, std::span<const int> fds = {}) {
  const iovec io{const_cast<char*>(bytes.data()), bytes.size()};
  const long sent = sb::ipc::send_with_descriptors(fd, std::span<const iovec>(&io, 1), fds,
                                                   MSG_NOSIGNAL | MSG_DONTWAIT);
  return sent > 0 ? static_cast<std::size_t>(sent) : 0;
}

// Runs what is ready until nothing is.
void settle(boost::asio::io_context& io) {
  for (int idle = 0; idle < 2;) {
    if (io.stopped()) io.restart();
    idle = io.poll() == 0 ? idle + 1 : 0;
  }
}

// Every meta decoder on the meta of a frame. The binary metas have one encoding each: what
// decodes must encode back to the very same bytes.
void decode_meta(const std::string& meta) {
  if (const auto outcome = decode_outcome(meta)) FUZZ_CHECK(encode_outcome(*outcome) == meta);
  if (const auto message = decode_message_meta(meta))
    FUZZ_CHECK(encode_message_meta(*message) == meta);
  if (const auto call = decode_call_meta(meta)) FUZZ_CHECK(encode_call_meta(*call) == meta);
}

// A frame as its codec wrote it: the same type, call id, meta and body, and a descriptor
// where the original had one. Hello's meta and an event's body are JSON, whose spelling a
// decoder does not keep: those are held to decoding back to the same encoding instead.
struct Shape {
  FrameType type{};
  std::uint64_t call_id = 0;
  std::string meta;
  std::string body;
  bool fd = false;
};

Shape shape_of(const Frame& frame) {
  return Shape{frame.type, frame.call_id, frame.meta, frame.body, frame.fd.valid()};
}

bool same(const Shape& a, const Shape& b) {
  return a.type == b.type && a.call_id == b.call_id && a.meta == b.meta && a.body == b.body &&
         a.fd == b.fd;
}

template <typename Decoded>
void check_encodes_back(const Shape& original, Decoded decoded) {
  if constexpr (std::is_same_v<Decoded, Malformed>) {
    FUZZ_CHECK(!decoded.reason.empty());
  } else if constexpr (std::is_same_v<Decoded, Hello> || std::is_same_v<Decoded, SessionEvent>) {
    const Shape once = shape_of(encode(decoded));
    auto again = decode_worker_frame(encode(decoded));
    FUZZ_CHECK(std::holds_alternative<Decoded>(again));
    FUZZ_CHECK(same(once, shape_of(encode(std::get<Decoded>(again)))));
  } else {
    FUZZ_CHECK(same(original, shape_of(encode(std::move(decoded)))));
  }
}

void round_trip(Frame&& frame) {
  const Shape original = shape_of(frame);
  const auto visit = [&](auto&& decoded) { check_encodes_back(original, std::move(decoded)); };
  if (static_cast<std::uint16_t>(frame.type) >= 100) {
    std::visit(visit, decode_worker_frame(std::move(frame)));
  } else {
    std::visit(visit, decode_supervisor_frame(std::move(frame)));
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::uint8_t control = data[0];
  const std::string_view bytes(reinterpret_cast<const char*>(data + 1), size - 1);
  const std::size_t pattern = control & 0x1f;
  const std::size_t fd_count = control >> 5;

  // The meta decoders see the raw bytes too: the supervisor decodes whatever a worker sent.
  decode_meta(std::string(bytes));

  auto [writer_end, reader_end] = make_channel();
  std::vector<int> fds;
  for (std::size_t i = 0; i < fd_count; ++i) {
    fds.push_back(::open("/dev/null", O_RDONLY));
    write_some(writer_end.descriptors.get(), std::string_view("\0", 1),
               std::span<const int>(&fds.back(), 1));
  }

  std::vector<Frame> delivered;
  bool closed = false;
  {
    boost::asio::io_context io;
    auto channel = std::make_shared<Channel>(io, std::move(reader_end));
    channel->start([&](Frame&& frame) { delivered.push_back(std::move(frame)); },
                   [&](const std::string&) { closed = true; });
    channel->hand_over_large_bodies(kHandOverFrom,
                                    [](const Frame& frame) { return frame.call_id % 2 == 1; });

    std::string_view rest = bytes;
    int stalls = 0;  // a reader that stops reading without closing would hang the loop
    for (std::size_t writes = 0; !rest.empty() && !closed && stalls < 100; ++writes) {
      std::size_t piece = rest.size();
      if (pattern != 0) piece = std::min(piece, 1 + (pattern * 97 + writes * 31) % (pattern * 64));
      const std::size_t sent = write_some(writer_end.frames.get(), rest.substr(0, piece));
      stalls = sent > 0 ? 0 : stalls + 1;
      rest.remove_prefix(sent);
      settle(io);
    }
    ::shutdown(writer_end.frames.get(), SHUT_WR);
    settle(io);
    // The stream ended, so the channel has closed: at a malformed frame or at the end.
    FUZZ_CHECK(closed);
    FUZZ_CHECK(!channel->is_open());
  }
  for (int fd : fds) ::close(fd);

  // Exactly the frames the wire format says, in order, byte for byte.
  const auto expected = expected_frames(bytes, fd_count);
  FUZZ_CHECK(delivered.size() == expected.size());
  for (std::size_t i = 0; i < delivered.size(); ++i) {
    const Frame& frame = delivered[i];
    FUZZ_CHECK(frame.type == expected[i].type && frame.call_id == expected[i].call_id);
    FUZZ_CHECK(frame.meta == expected[i].meta);
    FUZZ_CHECK(static_cast<bool>(frame.arriving) == expected[i].handed);
    if (frame.arriving) {
      const ArrivingBody& body = *frame.arriving;
      FUZZ_CHECK(frame.body.empty());
      FUZZ_CHECK(std::string_view(body.data(), body.arrived()) == expected[i].body);
      FUZZ_CHECK(expected[i].cut_off ? body.failed() : body.complete());
    } else {
      FUZZ_CHECK(!expected[i].cut_off && frame.body == expected[i].body);
    }
    FUZZ_CHECK(frame.fd.valid() == expected[i].fd);
    if (frame.fd.valid()) FUZZ_CHECK(::fcntl(frame.fd.get(), F_GETFD) & FD_CLOEXEC);
    decode_meta(frame.meta);
    if (!frame.arriving) round_trip(std::move(delivered[i]));
  }
  return 0;
}
