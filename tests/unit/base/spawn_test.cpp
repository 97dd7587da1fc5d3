// Spawning with descriptors moved into place.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>

#include "base/spawn.hpp"

namespace sb::base {
namespace {

// A source descriptor that is also the target of an earlier pair is moved aside before
// that pair overwrites it: each pipe gets its own word.
TEST(Spawn, ASourceThatIsAnEarlierTargetReachesItsOwnTarget) {
  int first[2];
  int second[2];
  // Non-blocking, so that a word gone astray fails the test instead of hanging it.
  ASSERT_EQ(::pipe2(first, O_CLOEXEC | O_NONBLOCK), 0);
  ASSERT_EQ(::pipe2(second, O_CLOEXEC | O_NONBLOCK), 0);
  const UniqueFd first_read(first[0]);
  const UniqueFd first_write(first[1]);
  const UniqueFd second_read(second[0]);
  const UniqueFd second_write(second[1]);
  const int low = second_write.get();  // the first pair's target
  const auto spawned = spawn(SpawnRequest{
      .program = "/bin/bash",
      .args = {"-c",
               "echo one >&" + std::to_string(low) + "; echo two >&" + std::to_string(low + 1)},
      .descriptors = {{first_write.get(), low}, {low, low + 1}},
  });
  ASSERT_TRUE(std::holds_alternative<Spawned>(spawned)) << std::get<std::string>(spawned);
  int status = 0;
  ASSERT_EQ(::waitpid(std::get<Spawned>(spawned).pid, &status, 0), std::get<Spawned>(spawned).pid);
  auto read_word = [](const UniqueFd& fd) {
    char buffer[16] = {};
    const long got = ::read(fd.get(), buffer, sizeof buffer);
    return std::string(buffer, got > 0 ? static_cast<std::size_t>(got) : 0);
  };
  EXPECT_EQ(read_word(first_read), "one\n");
  EXPECT_EQ(read_word(second_read), "two\n");
}

}  // namespace
}  // namespace sb::base
