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

// A process started with descriptors handed over has low numbers free, where the program
// it opened may sit: a pair whose target it is must not replace what is executed.
TEST(Spawn, TheProgramsDescriptorSurvivesAPairThatTargetsIt) {
  int pipe[2];
  ASSERT_EQ(::pipe2(pipe, O_CLOEXEC | O_NONBLOCK), 0);
  const UniqueFd read_end(pipe[0]);
  const UniqueFd write_end(pipe[1]);
  const UniqueFd program(::open("/bin/bash", O_PATH | O_CLOEXEC));
  ASSERT_TRUE(program.valid());
  const int target = program.get();
  const auto spawned = spawn(SpawnRequest{
      .program = "/bin/bash",
      .executable = program.get(),
      .args = {"-c", "echo ran >&" + std::to_string(target)},
      .descriptors = {{write_end.get(), target}},
  });
  ASSERT_TRUE(std::holds_alternative<Spawned>(spawned)) << std::get<std::string>(spawned);
  int status = 0;
  ASSERT_EQ(::waitpid(std::get<Spawned>(spawned).pid, &status, 0), std::get<Spawned>(spawned).pid);
  char buffer[16] = {};
  const long got = ::read(read_end.get(), buffer, sizeof buffer);
  EXPECT_EQ(std::string(buffer, got > 0 ? static_cast<std::size_t>(got) : 0), "ran\n");
}

// The child reports a failed exec through a pipe opened at the lowest numbers free; a pair
// that targets its number must not take the report (which would read as a success).
TEST(Spawn, AFailedExecIsReportedWhenAPairTargetsThePipesNumber) {
  const UniqueFd source(::open("/dev/null", O_WRONLY | O_CLOEXEC));
  ASSERT_TRUE(source.valid());
  // The two lowest free numbers, which the error pipe takes next.
  int free_numbers[2];
  {
    const UniqueFd first(::open("/dev/null", O_RDONLY | O_CLOEXEC));
    const UniqueFd second(::open("/dev/null", O_RDONLY | O_CLOEXEC));
    free_numbers[0] = first.get();
    free_numbers[1] = second.get();
  }
  const auto spawned = spawn(SpawnRequest{
      .program = "/nonexistent/program",
      .descriptors = {{source.get(), free_numbers[1]}},
  });
  ASSERT_TRUE(std::holds_alternative<std::string>(spawned));
  EXPECT_NE(std::get<std::string>(spawned).find("exec in the child"), std::string::npos)
      << std::get<std::string>(spawned);
}

}  // namespace
}  // namespace sb::base
