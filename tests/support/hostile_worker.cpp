// hostile_worker: a scripted worker that breaks the IPC contract on purpose, for the
// end-to-end tests of the supervisor's checks (tests/e2e/hostile_worker_test.cpp).
//
// Installed as `switchboard-worker` beside a copy of `switchboard`. It peeks at the
// kConfigure frame the supervisor sends first: a computer whose name does not start with
// "hostile-", or whose misbehaviour already ran once (a file in $SB_HOSTILE_STATE_DIR),
// gets the real worker ($SB_HOSTILE_REAL_WORKER) executed in place, which then reads that
// very frame. Otherwise it says a correct hello, waits for the file NAME.go in the state
// directory (so that a test can measure the supervisor first), and then does what the
// rest of its name says.
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
#include <string>
#include <thread>
#include <vector>

#include "ipc/channel.hpp"
#include "ipc/frame.hpp"
#include "ipc/messages.hpp"
#include "ipc/status_board.hpp"

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
    const auto meta = nlohmann::json::parse(bytes.begin() + sizeof header, bytes.end());
    return meta.at("name").get<std::string>();
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
  const bool hello_is_the_breach =
      how == "version" || how == "before-hello" || how == "silent" || how == "descriptors";
  if (!hello_is_the_breach) say_hello();
  while (!fs::exists(fs::path(state) / (name + ".go")))
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
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
