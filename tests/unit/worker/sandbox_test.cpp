// The worker's sandbox, entered in a forked child: once in, opening any file kills the
// process (SIGSYS), and what a worker does (I/O on descriptors it holds) still works.
#include "worker/sandbox.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <functional>

namespace {

// The wait status of a child that entered the sandbox and then ran `then`.
int sandboxed_child(const std::function<int()>& then) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    if (sb::worker::enter_sandbox()) ::_exit(90);
    ::_exit(then());
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  return status;
}

bool killed_by_sigsys(int status) {
  return WIFSIGNALED(status) && WTERMSIG(status) == SIGSYS;
}

#if defined(SWITCHBOARD_SANITIZED)
constexpr bool kSanitized = true;
#else
constexpr bool kSanitized = false;
#endif

TEST(Sandbox, AWorkerCannotCreateOrWriteAFile) {
  const int status = sandboxed_child([] {
    const int fd = ::open("/tmp/sandbox-test-must-not-exist", O_WRONLY | O_CREAT, 0600);
    return fd >= 0 ? 0 : 1;
  });
  EXPECT_TRUE(killed_by_sigsys(status)) << "wait status " << status;
}

TEST(Sandbox, AWorkerCannotReadAFile) {
  if (kSanitized)
    GTEST_SKIP() << "sanitizer builds let the runtime read /proc (worker/sandbox.cpp)";
  const int status = sandboxed_child([] { return ::open("/etc/hostname", O_RDONLY) >= 0 ? 0 : 1; });
  EXPECT_TRUE(killed_by_sigsys(status)) << "wait status " << status;
}

TEST(Sandbox, AWorkerCannotMakeASocketOrSignalAnotherProcess) {
  EXPECT_TRUE(killed_by_sigsys(
      sandboxed_child([] { return ::socket(AF_UNIX, SOCK_STREAM, 0) >= 0 ? 0 : 1; })));
  const pid_t parent = ::getpid();
  EXPECT_TRUE(
      killed_by_sigsys(sandboxed_child([parent] { return ::kill(parent, 0) == 0 ? 0 : 1; })));
}

TEST(Sandbox, IoOnDescriptorsItHoldsStillWorks) {
  int pair[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, pair), 0);
  const int status = sandboxed_child([&] {
    char byte = 'x';
    if (::write(pair[0], &byte, 1) != 1) return 2;
    if (::read(pair[1], &byte, 1) != 1) return 3;
    return byte == 'x' ? 0 : 4;
  });
  ::close(pair[0]);
  ::close(pair[1]);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "wait status " << status;
}

}  // namespace
