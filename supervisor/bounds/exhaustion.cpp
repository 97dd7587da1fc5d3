#include "supervisor/bounds/exhaustion.hpp"

#include <sys/resource.h>

#include <cerrno>
#include <chrono>

namespace sb::supervisor {

namespace {
// nginx waits 500 ms; a shorter pause serves a burst of closing connections sooner and
// still costs nothing measurable.
constexpr auto kAcceptPause = std::chrono::milliseconds(250);
}  // namespace

bool is_exhaustion(const boost::system::error_code& error) {
  if (error.category() != boost::system::system_category()) return false;
  const int value = error.value();
  return value == EMFILE || value == ENFILE || value == ENOBUFS || value == ENOMEM;
}

void raise_descriptor_limit() {
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0) return;
  if (limit.rlim_cur < limit.rlim_max) {
    const rlim_t before = limit.rlim_cur;
    limit.rlim_cur = limit.rlim_max;
    if (::setrlimit(RLIMIT_NOFILE, &limit) != 0) limit.rlim_cur = before;
  }
  const auto shown = [](rlim_t value) {
    return value == RLIM_INFINITY ? std::string("unlimited") : std::to_string(value);
  };
  log_info("descriptor limit", {{"open_files", shown(limit.rlim_cur)}});
}

bool AcceptPause::pause_on(const boost::system::error_code& error, std::function<void()> resume) {
  if (!is_exhaustion(error)) return false;
  if (const auto count = throttle_.due()) {
    log_error(
        "cannot accept connections: out of descriptors or memory; pausing",
        {{"listener", listener_}, {"error", error.message()}, {"times", std::to_string(*count)}});
  }
  timer_.expires_after(kAcceptPause);
  timer_.async_wait([resume = std::move(resume)](const boost::system::error_code& waited) {
    if (!waited) resume();
  });
  return true;
}

}  // namespace sb::supervisor
