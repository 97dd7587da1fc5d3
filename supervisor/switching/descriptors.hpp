// Descriptors that cross a switch in place, named, in the one format both carriers use
// (docs/architecture.md, "Switching"): systemd's, as sd_listen_fds(3) reads it. A new
// build executed in place (SIGUSR2) finds them where systemd would put them after a
// restart from its file descriptor store: from descriptor 3 on, counted by LISTEN_FDS,
// named by LISTEN_FDNAMES, for the process LISTEN_PID names.
#pragma once

#include <cstddef>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/unique_fd.hpp"

namespace sb::supervisor {

struct NamedDescriptor {
  std::string name;
  base::UniqueFd fd;
};

// The names descriptors cross under, in both carriers (docs/architecture.md, "Switching"):
// short, since a service manager hands every name over in one environment variable.
inline constexpr std::string_view kHttpListenerName = "listen-http";
inline constexpr std::string_view kControlListenerName = "listen-control";
inline constexpr std::string_view kMetricsListenerName = "listen-metrics";
inline constexpr std::string_view kStateName = "state";          // the switch's state file
inline constexpr std::string_view kRequesterName = "requester";  // `switchboard upgrade`'s
inline constexpr std::string_view kCallerPrefix = "h-";          // a caller's connection
inline constexpr std::string_view kSocketPrefix = "c-";          // a computer's socket
inline constexpr std::string_view kRecordPrefix = "r-";          // a worker's record file

// At most this many descriptors are read from the environment: a thousand computers and
// every caller's connection fit many times over.
inline constexpr std::size_t kMaxInheritedDescriptors = 1'000'000;
// What LISTEN_FDNAMES may take: one string of the environment is at most 128 KiB.
inline constexpr std::size_t kMaxNamesBytes = 120 * 1024;

// The descriptors this process was handed, each marked close-on-exec, and the variables
// removed from the environment so that no child sees them. None when LISTEN_PID names
// another process, or the variables do not agree (`why` then says so).
std::vector<NamedDescriptor> take_inherited_descriptors(std::string& why);

// Whether `name` may name a descriptor: what systemd accepts in FDNAME= (at most 255
// printable ASCII characters, no colon).
bool valid_descriptor_name(std::string_view name);

// Whether the socket `fd` is bound to `ip`:`port` (a TCP listener), or to the Unix socket
// path `path`: a listener handed over is taken up only for the address the config names
// now.
bool bound_to(int fd, const std::string& ip, unsigned short port);
bool bound_to(int fd, const std::filesystem::path& path);

// One program to execute, by path or, when `fd` is set, by an O_PATH descriptor.
struct ExecTarget {
  std::filesystem::path path;
  int fd = -1;
};

// Puts `descriptors` on 3, 4, ... with everything else above them closed at exec, sets
// LISTEN_PID, LISTEN_FDS and LISTEN_FDNAMES, and executes the first target that can be
// executed, with `argv`. Returns only if none could be, with the reason; unless the names
// were too long for the environment (checked first), the process's own descriptors are
// then no longer where they were, so it can only exit.
std::string exec_with_descriptors(const std::vector<ExecTarget>& targets,
                                  const std::vector<std::string>& argv,
                                  std::vector<NamedDescriptor> descriptors);

// A sealed memory file holding `bytes` (what a switch's state travels in); invalid, with
// `why` set, when one cannot be made.
base::UniqueFd memory_file(const char* name, std::string_view bytes, std::string& why);
// The whole content of a memory file, when it holds at most `bound` bytes.
std::optional<std::string> read_memory_file(int fd, std::size_t bound, std::string& why);

}  // namespace sb::supervisor
