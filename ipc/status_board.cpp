#include "ipc/status_board.hpp"

#include <boost/interprocess/mapped_region.hpp>
#include <boost/interprocess/shared_memory_object.hpp>
#include <cstring>
#include <ctime>
#include <new>

namespace sb::ipc {

namespace bip = boost::interprocess;

namespace {

constexpr std::size_t kPeerCapacity = 256;
constexpr std::size_t kServerCapacity = 4096;
// A whole slot is found at once unless the writer publishes twice during one copy; a
// record still torn after this many looks is the writer's doing, not bad luck.
constexpr int kReadAttempts = 4;

// The fixed-size image of a ComputerStatus in shared memory.
struct RecordData {
  ComputerState state;
  std::int32_t worker_pid;
  std::uint32_t in_flight;
  std::uint32_t max_in_flight;
  std::int64_t attached_at_ms;
  std::uint64_t generation;
  std::uint32_t offers;
  std::uint64_t messages_dropped;
  std::uint32_t peer_size;
  std::uint32_t server_size;
  char peer[kPeerCapacity];
  char server[kServerCapacity];
};

// The fixed-size fields, named alike in the record and in ComputerStatus; copied either way.
template <class From, class To>
void copy_figures(const From& from, To& to) {
  to.state = from.state;
  to.worker_pid = from.worker_pid;
  to.in_flight = from.in_flight;
  to.max_in_flight = from.max_in_flight;
  to.attached_at_ms = from.attached_at_ms;
  to.generation = from.generation;
  to.offers = from.offers & offer::kAll;
  to.messages_dropped = from.messages_dropped;
}

}  // namespace

// Two slots, written alternately: while the worker writes one (and may be preempted or
// stopped half-way), the other holds the last complete status, so a reader never has to
// wait for the writer or guess.
struct BoardSlot {
  std::atomic<std::uint64_t> sequence{0};  // odd while being written
  RecordData data{};
};

struct BoardRecord {
  std::atomic<std::uint64_t> version{0};  // the slot version % 2 is the latest complete one
  std::atomic<std::int64_t> heartbeat_ms{0};
  BoardSlot slots[2];
};
static_assert(std::atomic<std::uint64_t>::is_always_lock_free);

std::int64_t monotonic_ms() {
  timespec now{};
  ::clock_gettime(CLOCK_MONOTONIC, &now);
  return std::int64_t(now.tv_sec) * 1000 + now.tv_nsec / 1'000'000;
}

struct StatusWriter::Mapping {
  bip::shared_memory_object object;
  bip::mapped_region region;
};

StatusWriter::StatusWriter(const std::string& segment_name)
    : mapping_(std::make_unique<Mapping>()) {
  mapping_->object =
      bip::shared_memory_object(bip::open_only, segment_name.c_str(), bip::read_write);
  mapping_->region = bip::mapped_region(mapping_->object, bip::read_write, 0, sizeof(BoardRecord));
  record_ = static_cast<BoardRecord*>(mapping_->region.get_address());
}

StatusWriter::~StatusWriter() = default;

void StatusWriter::publish(const ComputerStatus& status) {
  RecordData data{};
  copy_figures(status, data);
  data.peer_size = static_cast<std::uint32_t>(std::min(status.peer.size(), kPeerCapacity));
  std::memcpy(data.peer, status.peer.data(), data.peer_size);
  // A serverInfo too large to keep is shown as null rather than cut into invalid JSON.
  const std::string_view server =
      status.server_json.size() <= kServerCapacity ? std::string_view(status.server_json) : "null";
  data.server_size = static_cast<std::uint32_t>(server.size());
  std::memcpy(data.server, server.data(), server.size());

  const std::uint64_t next = record_->version.load(std::memory_order_relaxed) + 1;
  BoardSlot& slot = record_->slots[next % 2];
  slot.sequence.store(2 * next - 1, std::memory_order_relaxed);  // odd: writing
  std::atomic_thread_fence(std::memory_order_release);
  std::memcpy(&slot.data, &data, sizeof data);
  slot.sequence.store(2 * next, std::memory_order_release);  // even: complete
  record_->version.store(next, std::memory_order_release);
}

void StatusWriter::heartbeat() {
  record_->heartbeat_ms.store(monotonic_ms(), std::memory_order_relaxed);
}

struct StatusReader::Mapping {
  bip::shared_memory_object object;
  bip::mapped_region region;
};

StatusReader::StatusReader(std::string segment_name)
    : name_(std::move(segment_name)), mapping_(std::make_unique<Mapping>()) {
  bip::shared_memory_object::remove(name_.c_str());
  mapping_->object = bip::shared_memory_object(bip::create_only, name_.c_str(), bip::read_write);
  mapping_->object.truncate(sizeof(BoardRecord));
  mapping_->region = bip::mapped_region(mapping_->object, bip::read_write, 0, sizeof(BoardRecord));
  record_ = new (mapping_->region.get_address()) BoardRecord();
}

StatusReader::~StatusReader() {
  unlink();
}

void StatusReader::unlink() {
  bip::shared_memory_object::remove(name_.c_str());
}

ComputerStatus StatusReader::read() const {
  RecordData data;
  bool whole = false;
  for (int attempt = 0; attempt < kReadAttempts && !whole; ++attempt) {
    const std::uint64_t version = record_->version.load(std::memory_order_acquire);
    const BoardSlot& slot = record_->slots[version % 2];
    const std::uint64_t before = slot.sequence.load(std::memory_order_acquire);
    if (before % 2 != 0) continue;
    std::memcpy(&data, &slot.data, sizeof data);
    std::atomic_thread_fence(std::memory_order_acquire);
    whole = slot.sequence.load(std::memory_order_relaxed) == before;
  }
  if (!whole) {
    ++torn_reads_;
    if (torn_since_ms_ == 0) torn_since_ms_ = monotonic_ms();
    return last_whole_;
  }
  torn_since_ms_ = 0;
  ComputerStatus status;
  copy_figures(data, status);
  status.peer.assign(data.peer, std::min<std::size_t>(data.peer_size, kPeerCapacity));
  status.server_json.assign(data.server, std::min<std::size_t>(data.server_size, kServerCapacity));
  if (status.server_json.empty()) status.server_json = "null";
  last_whole_ = status;
  return status;
}

std::int64_t StatusReader::torn_for_ms() const {
  return torn_since_ms_ == 0 ? 0 : monotonic_ms() - torn_since_ms_ + 1;
}

std::int64_t StatusReader::heartbeat_age_ms() const {
  const std::int64_t beat = record_->heartbeat_ms.load(std::memory_order_relaxed);
  return beat == 0 ? INT64_MAX : monotonic_ms() - beat;
}

}  // namespace sb::ipc
