// hostile_worker: a scripted worker that breaks the IPC contract on purpose, for the
// end-to-end tests of the supervisor's checks (tests/e2e/workers_hostile_worker_test.cpp).
//
// Installed as `switchboard-worker` beside a copy of `switchboard`. It peeks at the
// kConfigure frame the supervisor sends first: a computer whose name does not start with
// "hostile-", or whose misbehaviour already ran once (a file in $SB_HOSTILE_STATE_DIR),
// gets the real worker ($SB_HOSTILE_REAL_WORKER) executed in place, which then reads that
// very frame. Otherwise it says a correct hello, waits for the file NAME.go in the state
// directory (so that a test can measure the supervisor first), and then does what the
// rest of its name says: one breach of the contract, or "slow-reply" or "trickle-reply"
// (reply_slowly). "bad-record" waits for the supervisor's kPark (a switch in place) and
// answers it with a record that does not read.
#include <fcntl.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "ipc/channel.hpp"
#include "ipc/frame.hpp"
#include "ipc/messages.hpp"
#include "ipc/status_board.hpp"
#include "ipc/supervisor_frames.hpp"

namespace {

using sb::ipc::FrameType;
using sb::ipc::WireHeader;
namespace fs = std::filesystem;

constexpr int kChannel = 3;

// The first frame, read without taking it off the socket.
std::string peek_configure_name() {
  std::vector<char> bytes(sizeof(WireHeader));
  for (;;) {
    pollfd readable{kChannel, POLLIN, 0};
    ::poll(&readable, 1, 1000);
    const long got = ::recv(kChannel, bytes.data(), bytes.size(), MSG_PEEK);
    if (got == 0 || (got < 0 && errno != EAGAIN)) std::exit(3);
    if (got < static_cast<long>(bytes.size())) continue;
    WireHeader header;
    std::memcpy(&header, bytes.data(), sizeof header);
    if (bytes.size() == sizeof header) {
      bytes.resize(sizeof header + header.meta_size);
      continue;
    }
    auto configure = sb::ipc::decode_supervisor_frame(
        sb::ipc::Frame{.type = static_cast<FrameType>(header.type),
                       .meta = std::string(bytes.begin() + sizeof header, bytes.end())});
    if (!std::holds_alternative<sb::ipc::Configure>(configure)) std::exit(3);
    return std::get<sb::ipc::Configure>(configure).computer;
  }
}

// A frame as the wire carries it, header fields as given.
std::string frame_bytes(FrameType type, std::uint64_t call_id, const std::string& meta,
                        const std::string& body, std::uint16_t has_fd, std::uint32_t reserved) {
  const WireHeader header{static_cast<std::uint32_t>(meta.size()),
                          static_cast<std::uint32_t>(body.size()),
                          call_id,
                          static_cast<std::uint16_t>(type),
                          has_fd,
                          reserved};
  return std::string(reinterpret_cast<const char*>(&header), sizeof header) + meta + body;
}

// Each part of a misbehaviour goes out whole, in order.
void make_channel_blocking() {
  const int flags = ::fcntl(kChannel, F_GETFL);
  ::fcntl(kChannel, F_SETFL, flags & ~O_NONBLOCK);
}

void send_frame(FrameType type, std::uint64_t call_id, const std::string& meta,
                const std::string& body, std::uint16_t has_fd = 0, std::uint32_t reserved = 0) {
  const std::string bytes = frame_bytes(type, call_id, meta, body, has_fd, reserved);
  make_channel_blocking();
  [[maybe_unused]] const auto sent = ::send(kChannel, bytes.data(), bytes.size(), MSG_NOSIGNAL);
}

std::string hello_meta(std::int64_t protocol = sb::ipc::kProtocolVersion) {
  return nlohmann::json{
      {"pid", ::getpid()}, {"protocol", protocol}, {"build", std::string(sb::ipc::build_id())}}
      .dump();
}

// Reads exactly `size` bytes from the (blocking) channel, or exits: the supervisor left.
void read_exact(char* into, std::size_t size) {
  while (size > 0) {
    const long got = ::read(kChannel, into, size);
    if (got <= 0) std::exit(3);
    into += got;
    size -= static_cast<std::size_t>(got);
  }
}

// Skips the frames the supervisor sends (the kConfigure peeked at first among them) up to
// the first of type `type`, and returns its call id.
std::uint64_t await_frame(FrameType type) {
  for (;;) {
    WireHeader header;
    read_exact(reinterpret_cast<char*>(&header), sizeof header);
    std::string payload(std::size_t{header.meta_size} + header.body_size, '\0');
    read_exact(payload.data(), payload.size());
    if (header.type == static_cast<std::uint16_t>(type)) return header.call_id;
  }
}

std::uint64_t await_call() {
  return await_frame(FrameType::kCall);
}

void say_hello(std::int64_t protocol = sb::ipc::kProtocolVersion) {
  send_frame(FrameType::kHello, 0, hello_meta(protocol), "");
}

// A correct hello, each of its bytes sent alone with a descriptor the frame does not
// declare: the supervisor must read the hello and hold none of them.
void say_hello_smuggling_descriptors() {
  std::string bytes = frame_bytes(FrameType::kHello, 0, hello_meta(), "", 0, 0);
  make_channel_blocking();
  for (char& byte : bytes) {
    const int smuggled = ::open("/dev/null", O_RDONLY);
    const iovec part{&byte, 1};
    sb::ipc::send_with_descriptors(kChannel, std::span<const iovec>(&part, 1),
                                   std::span<const int>(&smuggled, 1), MSG_NOSIGNAL);
    ::close(smuggled);
  }
}

void send_event(const nlohmann::json& event) {
  send_frame(FrameType::kEvent, 0, "", event.dump());
}

// The status record, mapped before the hello (after which the supervisor unlinks its name).
char* map_status_record(const std::string& segment) {
  const int fd = ::shm_open(segment.c_str(), O_RDWR, 0);
  if (fd < 0) std::exit(4);
  void* base = ::mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (base == MAP_FAILED) std::exit(4);
  return static_cast<char*>(base);
}

// Beats like a real worker, so that only the breach under test can be what the
// supervisor reacts to (a worker that never beats is killed as stalled).
void keep_beating(char* base) {
  std::thread([base] {
    auto* heartbeat = reinterpret_cast<volatile std::int64_t*>(base + 8);
    for (;;) {
      *heartbeat = sb::ipc::monotonic_ms();
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
  }).detach();
}

// Keeps the status record torn (its published slot's sequence odd). The offsets are those
// of ipc/status_board.cpp's BoardRecord: version, heartbeat, then slot 0's sequence.
[[noreturn]] void keep_record_torn(char* base) {
  auto* version = reinterpret_cast<volatile std::uint64_t*>(base);
  auto* first_sequence = reinterpret_cast<volatile std::uint64_t*>(base + 16);
  for (;;) {
    *version = 0;
    *first_sequence = 1;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

// Not a breach: a worker slow in the middle of a large reply, as any worker can be under
// load. Its computer reads as ready; the first call gets a progress message (which turns
// the response of a caller taking event streams into one), then a 1 MiB reply of which only
// the first half is sent: it ends "FIRST-HALF-END" and a CR between two members. The rest,
// from the LF of that line break to "SECOND-HALF-END", follows once the file NAME.rest
// exists (tests of docs/architecture.md, "Large replies"). Trickling, it sends the rest
// at once but a byte every 100 ms.
void reply_slowly(const std::string& name, sb::ipc::StatusWriter& status, bool trickle) {
  sb::ipc::ComputerStatus ready;
  ready.state = sb::ipc::ComputerState::kReady;
  ready.worker_pid = ::getpid();
  ready.max_in_flight = 4;
  status.publish(ready);
  make_channel_blocking();
  const std::uint64_t call_id = await_call();

  send_frame(FrameType::kMessage, call_id,
             sb::ipc::encode_message_meta({sb::ipc::MessageKind::kProgress, 0}),
             R"({"jsonrpc":"2.0","method":"notifications/progress",)"
             R"("params":{"progressToken":"big","progress":1}})");
  const std::string first_half =
      R"({"jsonrpc":"2.0","result":{"content":[{"type":"text","text":")" +
      std::string(1 << 20, 'a') + "FIRST-HALF-END\"},\r";
  const std::string second_half =
      "\n"
      R"({"type":"text","text":"SECOND-HALF-END"}],"isError":false}})";
  const std::string body = first_half + second_half;
  const std::string meta = sb::ipc::encode_outcome(
      {sb::ipc::CallStatus::kReplied, body.size() + 8, sb::ipc::ReplyKind::kOk});
  const std::string bytes = frame_bytes(FrameType::kReply, call_id, meta, body, 0, 0);
  const std::size_t first_part = bytes.size() - second_half.size();
  [[maybe_unused]] auto sent = ::send(kChannel, bytes.data(), first_part, MSG_NOSIGNAL);
  if (trickle) {
    for (std::size_t at = first_part; at < bytes.size(); ++at) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      if (::send(kChannel, bytes.data() + at, 1, MSG_NOSIGNAL) != 1) return;
    }
    return;
  }
  const fs::path rest = fs::path(std::getenv("SB_HOSTILE_STATE_DIR")) / (name + ".rest");
  while (!fs::exists(rest)) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  sent = ::send(kChannel, bytes.data() + first_part, bytes.size() - first_part, MSG_NOSIGNAL);
}

void misbehave(const std::string& how, char* status_record) {
  if (how == "declared-descriptor") {
    send_frame(FrameType::kReply, 1, "", "", 1);
  } else if (how == "unknown-type") {
    send_frame(static_cast<FrameType>(999), 0, "", "");
  } else if (how == "bad-meta") {
    send_frame(FrameType::kReply, 1, R"({"status":"replied"})", "{}");
  } else if (how == "reserved") {
    send_frame(FrameType::kEvent, 0, "", "{}", 0, 7);
  } else if (how == "oversized-event") {
    send_event({{"event", "vm_attach"}, {"peer", std::string(8000, 'p')}, {"generation", 1}});
  } else if (how == "forged-event") {
    send_event({{"event", "vm_attach"}, {"computer", "steady"}, {"peer", "x"}, {"generation", 1}});
  } else if (how == "foreign-event") {
    send_event({{"event", "config_reloaded"}, {"added", nlohmann::json::array()}});
  } else if (how == "unissued-generation") {
    send_event({{"event", "vm_detach"},
                {"peer", "x"},
                {"generation", 7},
                {"code", 1000},
                {"reason", "normal closure"},
                {"attached_for_secs", 1}});
  } else if (how == "unmade-call") {
    // A well-formed reply, to a call id the supervisor has not issued yet.
    send_frame(FrameType::kReply, 1'000'000'000,
               sb::ipc::encode_outcome({sb::ipc::CallStatus::kTimeout, 0}), "");
  } else if (how == "unasked-park") {
    send_frame(FrameType::kParked, 0, "", "a record");
  } else if (how == "bad-record") {
    // Asked to park for a switch in place, it answers with a record that does not read.
    make_channel_blocking();
    await_frame(FrameType::kPark);
    send_frame(FrameType::kParked, 0, "", std::string(64, '\x7f'));
  } else if (how == "second-hello") {
    say_hello();
  } else if (how == "torn") {
    keep_record_torn(status_record);
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::string segment;
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::string(argv[i]) == "--status-segment") segment = argv[i + 1];
  }
  const std::string name = peek_configure_name();
  const char* state = std::getenv("SB_HOSTILE_STATE_DIR");
  const char* real = std::getenv("SB_HOSTILE_REAL_WORKER");
  if (!state || !real) return 2;
  const fs::path done = fs::path(state) / name;
  if (!name.starts_with("hostile-") || fs::exists(done)) {
    ::execv(real, argv);
    return 5;
  }
  std::ofstream(done.string()) << "ran\n";
  const std::string how = name.substr(std::strlen("hostile-"));
  // These break the rule on the hello itself, so they wait before saying anything ("silent"
  // never says it: the test never lets it go).
  char* status_record = map_status_record(segment);
  keep_beating(status_record);
  // Its name is unlinked once the hello is in, so the writer maps it now.
  std::optional<sb::ipc::StatusWriter> status;
  const bool replies_slowly = how == "slow-reply" || how == "trickle-reply";
  if (replies_slowly) status.emplace(segment);
  const bool hello_is_the_breach =
      how == "version" || how == "before-hello" || how == "silent" || how == "descriptors";
  if (!hello_is_the_breach) say_hello();
  while (!fs::exists(fs::path(state) / (name + ".go")))
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  if (replies_slowly) {
    reply_slowly(name, *status, how == "trickle-reply");
    return 0;  // said all it had to: the supervisor reads what is left and respawns it
  }
  if (how == "version") {
    say_hello(sb::ipc::kProtocolVersion + 1);
  } else if (how == "descriptors") {
    say_hello_smuggling_descriptors();
  } else {
    misbehave(how == "before-hello" ? "unmade-call" : how, status_record);
  }
  // Reads (and drops) whatever the supervisor says until it closes or kills this process.
  char sink[4096];
  while (::read(kChannel, sink, sizeof sink) != 0) {
    pollfd readable{kChannel, POLLIN, 0};
    ::poll(&readable, 1, 1000);
  }
  return 0;
}
