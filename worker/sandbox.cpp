#include "worker/sandbox.hpp"

#include <fcntl.h>
#include <seccomp.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>
#include <memory>

namespace sb::worker {
namespace {

// Sanitizer runtimes read /proc, stop the world and symbolize at exit and on an error;
// their builds allow that (read-only opens included) and nothing else more.
#if defined(__SANITIZE_ADDRESS__)
constexpr bool kSanitized = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(undefined_behavior_sanitizer)
constexpr bool kSanitized = true;
#else
constexpr bool kSanitized = false;
#endif
#else
constexpr bool kSanitized = false;
#endif

// What the worker's event loop does after start, as strace saw it over every test suite
// (and the paths no test takes: SIGTERM through Asio's signal pipe, abort, malloc). The
// descriptors it can reach are its channel, its status record and the sockets passed to it.
constexpr int kAllowed[] = {
    // I/O on held descriptors
    SCMP_SYS(read),
    SCMP_SYS(write),
    SCMP_SYS(recvmsg),
    SCMP_SYS(sendmsg),
    SCMP_SYS(recvfrom),
    SCMP_SYS(sendto),
    SCMP_SYS(close),
    SCMP_SYS(shutdown),
    SCMP_SYS(getsockname),
    // the event loop and its timers (the clock is read without a system call where the
    // kernel offers it, with one where it does not)
    SCMP_SYS(epoll_wait),
    SCMP_SYS(epoll_pwait),
    SCMP_SYS(epoll_ctl),
    SCMP_SYS(timerfd_settime),
    SCMP_SYS(clock_gettime),
    SCMP_SYS(gettimeofday),
    // memory
    SCMP_SYS(mmap),
    SCMP_SYS(munmap),
    SCMP_SYS(mremap),
    SCMP_SYS(brk),
    SCMP_SYS(madvise),
    SCMP_SYS(futex),
    // signals delivered to itself, and leaving
    SCMP_SYS(rt_sigreturn),
    SCMP_SYS(rt_sigprocmask),
    SCMP_SYS(rt_sigaction),
    SCMP_SYS(restart_syscall),
    SCMP_SYS(getpid),
    SCMP_SYS(gettid),
    SCMP_SYS(exit),
    SCMP_SYS(exit_group),
};

// What AddressSanitizer's and LeakSanitizer's runtimes do at exit and on a report.
constexpr int kSanitizerAllowed[] = {
    SCMP_SYS(readlink),        SCMP_SYS(getdents64),
    SCMP_SYS(getdents),        SCMP_SYS(clone),
    SCMP_SYS(ptrace),          SCMP_SYS(wait4),
    SCMP_SYS(prctl),           SCMP_SYS(sigaltstack),
    SCMP_SYS(prlimit64),       SCMP_SYS(sched_getaffinity),
    SCMP_SYS(pread64),         SCMP_SYS(uname),
    SCMP_SYS(getppid),         SCMP_SYS(newfstatat),
    SCMP_SYS(statx),           SCMP_SYS(dup),
    SCMP_SYS(pipe2),           SCMP_SYS(getrlimit),
    SCMP_SYS(setrlimit),       SCMP_SYS(rt_sigtimedwait),
    SCMP_SYS(set_robust_list), SCMP_SYS(rseq),
    SCMP_SYS(msync),           SCMP_SYS(fstat),
    SCMP_SYS(lseek),           SCMP_SYS(mprotect),
    SCMP_SYS(sched_yield),     SCMP_SYS(nanosleep),
    SCMP_SYS(getrandom),       SCMP_SYS(readv),
    SCMP_SYS(writev),          SCMP_SYS(fcntl),
    SCMP_SYS(getpeername),     SCMP_SYS(clock_nanosleep),
};

using Filter = std::unique_ptr<std::remove_pointer_t<scmp_filter_ctx>, decltype(&seccomp_release)>;

std::string failed(const char* step, int error) {
  return std::string(step) + ": " + std::strerror(error < 0 ? -error : error);
}

}  // namespace

std::optional<std::string> enter_sandbox() {
  // glibc reads the time zone file on its first time conversion, even for gmtime_r (a log
  // line's timestamp): read it now, while files may still be opened.
  ::tzset();
  // Without it an unprivileged process may not load a filter, and with it no exec can
  // ever gain privileges again.
  if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return failed("no_new_privs", errno);
  Filter filter(seccomp_init(SCMP_ACT_KILL_PROCESS), &seccomp_release);
  if (!filter) return std::string("seccomp_init failed");
  for (const int call : kAllowed) {
    if (const int error = seccomp_rule_add(filter.get(), SCMP_ACT_ALLOW, call, 0))
      return failed("seccomp_rule_add", error);
  }
  // ioctl only to switch a passed socket to non-blocking mode.
  if (const int error = seccomp_rule_add(filter.get(), SCMP_ACT_ALLOW, SCMP_SYS(ioctl), 1,
                                         SCMP_A1(SCMP_CMP_EQ, FIONBIO)))
    return failed("seccomp_rule_add", error);
  // Signals to itself only (abort() raises SIGABRT this way): never to the supervisor.
  for (const int call : {SCMP_SYS(kill), SCMP_SYS(tgkill)}) {
    if (const int error =
            seccomp_rule_add(filter.get(), SCMP_ACT_ALLOW, call, 1,
                             SCMP_A0(SCMP_CMP_EQ, static_cast<scmp_datum_t>(::getpid()))))
      return failed("seccomp_rule_add", error);
  }
  if constexpr (kSanitized) {
    for (const int call : kSanitizerAllowed) {
      if (const int error = seccomp_rule_add(filter.get(), SCMP_ACT_ALLOW, call, 0))
        return failed("seccomp_rule_add", error);
    }
    // Reading /proc (the runtime uses open as well as openat); never writing or creating.
    const unsigned flags = O_ACCMODE | O_CREAT;
    if (const int error = seccomp_rule_add(filter.get(), SCMP_ACT_ALLOW, SCMP_SYS(openat), 1,
                                           SCMP_A2(SCMP_CMP_MASKED_EQ, flags, O_RDONLY)))
      return failed("seccomp_rule_add", error);
    if (const int error = seccomp_rule_add(filter.get(), SCMP_ACT_ALLOW, SCMP_SYS(open), 1,
                                           SCMP_A1(SCMP_CMP_MASKED_EQ, flags, O_RDONLY)))
      return failed("seccomp_rule_add", error);
  }
  if (const int error = seccomp_load(filter.get())) return failed("seccomp_load", error);
  return std::nullopt;
}

}  // namespace sb::worker
