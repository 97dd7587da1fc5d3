#include "supervisor/switching/descriptors.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <linux/close_range.h>
#include <netinet/in.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <cstring>

extern char** environ;

namespace sb::supervisor {
namespace {

constexpr int kFirstDescriptor = 3;  // SD_LISTEN_FDS_START

std::optional<std::uint64_t> number_of(const char* text) {
  if (!text) return std::nullopt;
  const std::string_view view(text);
  std::uint64_t value = 0;
  const auto [end, error] = std::from_chars(view.data(), view.data() + view.size(), value);
  if (error != std::errc() || end != view.data() + view.size() || view.empty()) return std::nullopt;
  return value;
}

std::vector<std::string> split_names(std::string_view names) {
  std::vector<std::string> out;
  while (true) {
    const auto colon = names.find(':');
    out.emplace_back(names.substr(0, colon));
    if (colon == std::string_view::npos) return out;
    names.remove_prefix(colon + 1);
  }
}

void forget_variables() {
  ::unsetenv("LISTEN_PID");
  ::unsetenv("LISTEN_FDS");
  ::unsetenv("LISTEN_FDNAMES");
}

}  // namespace

bool valid_descriptor_name(std::string_view name) {
  if (name.empty() || name.size() > 255) return false;
  for (const char c : name) {
    if (c <= ' ' || c > '~' || c == ':') return false;
  }
  return true;
}

bool bound_to(int fd, const std::string& ip, unsigned short port) {
  sockaddr_storage address{};
  socklen_t length = sizeof address;
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0) return false;
  char text[INET6_ADDRSTRLEN] = {};
  if (address.ss_family == AF_INET) {
    const auto& v4 = reinterpret_cast<const sockaddr_in&>(address);
    ::inet_ntop(AF_INET, &v4.sin_addr, text, sizeof text);
    return ntohs(v4.sin_port) == port && ip == text;
  }
  if (address.ss_family == AF_INET6) {
    const auto& v6 = reinterpret_cast<const sockaddr_in6&>(address);
    ::inet_ntop(AF_INET6, &v6.sin6_addr, text, sizeof text);
    return ntohs(v6.sin6_port) == port && ip == text;
  }
  return false;
}

bool bound_to(int fd, const std::filesystem::path& path) {
  sockaddr_un address{};
  socklen_t length = sizeof address;
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0) return false;
  return address.sun_family == AF_UNIX && path.string() == address.sun_path;
}

std::vector<NamedDescriptor> take_inherited_descriptors(std::string& why) {
  const auto pid = number_of(std::getenv("LISTEN_PID"));
  const auto count = number_of(std::getenv("LISTEN_FDS"));
  const char* names_text = std::getenv("LISTEN_FDNAMES");
  const std::string names_copy = names_text ? names_text : "";
  const bool counted = std::getenv("LISTEN_FDS") != nullptr;
  forget_variables();
  // As sd_listen_fds(3): no count, no descriptors, whatever else is set.
  if (!counted) return {};
  if (!pid || *pid != static_cast<std::uint64_t>(::getpid())) {
    why = "LISTEN_PID names another process";
    return {};
  }
  if (!count || *count > kMaxInheritedDescriptors) {
    why = "LISTEN_FDS is not a count of descriptors";
    return {};
  }
  std::vector<std::string> names = split_names(names_copy);
  if (names_text == nullptr) names.assign(*count, "unknown");
  if (names.size() != *count) {
    why = "LISTEN_FDNAMES does not name each of LISTEN_FDS's descriptors";
    return {};
  }
  std::vector<NamedDescriptor> descriptors;
  for (std::uint64_t i = 0; i < *count; ++i) {
    const int fd = kFirstDescriptor + static_cast<int>(i);
    if (::fcntl(fd, F_SETFD, FD_CLOEXEC) != 0) continue;  // not open: nothing to take
    descriptors.push_back({std::move(names[i]), base::UniqueFd(fd)});
  }
  return descriptors;
}

std::string exec_with_descriptors(const std::vector<ExecTarget>& targets,
                                  const std::vector<std::string>& argv,
                                  std::vector<NamedDescriptor> descriptors) {
  const int count = static_cast<int>(descriptors.size());
  std::string names;
  for (const auto& descriptor : descriptors) names += (names.empty() ? "" : ":") + descriptor.name;
  // One string of the environment holds at most 128 KiB (MAX_ARG_STRLEN): checked before
  // anything moves, while the process can still carry on.
  if (names.size() + 32 > kMaxNamesBytes)
    return "too many descriptors to name in one environment variable";
  // Each is first copied above where they all go, so that placing one never closes another
  // still to be placed; so are the programs held by descriptor.
  std::vector<int> copies;
  for (auto& descriptor : descriptors) {
    const int copy = ::fcntl(descriptor.fd.get(), F_DUPFD_CLOEXEC, kFirstDescriptor + count);
    if (copy < 0) return std::string("copying a descriptor: ") + std::strerror(errno);
    copies.push_back(copy);
  }
  std::vector<ExecTarget> programs = targets;
  for (auto& program : programs) {
    if (program.fd >= 0)
      program.fd = ::fcntl(program.fd, F_DUPFD_CLOEXEC, kFirstDescriptor + count);
  }
  descriptors.clear();  // the originals close here; the copies are what crosses
  for (int i = 0; i < count; ++i) {
    if (::dup2(copies[i], kFirstDescriptor + i) < 0)
      return std::string("placing a descriptor: ") + std::strerror(errno);
  }
  // Everything else this process holds stays behind: Asio's own descriptors are marked
  // so already, an accepted socket is not.
  if (::close_range(kFirstDescriptor + count, ~0U, CLOSE_RANGE_CLOEXEC) != 0)
    return std::string("marking descriptors close-on-exec: ") + std::strerror(errno);
  ::setenv("LISTEN_PID", std::to_string(::getpid()).c_str(), 1);
  ::setenv("LISTEN_FDS", std::to_string(count).c_str(), 1);
  ::setenv("LISTEN_FDNAMES", names.c_str(), 1);
  std::vector<char*> args;
  for (const auto& arg : argv) args.push_back(const_cast<char*>(arg.c_str()));
  args.push_back(nullptr);
  std::string failures;
  for (const auto& target : programs) {
    if (target.fd >= 0) {
      ::execveat(target.fd, "", args.data(), environ, AT_EMPTY_PATH);
    } else {
      ::execv(target.path.c_str(), args.data());
    }
    failures += (failures.empty() ? "" : "; ") + target.path.string() + ": " + std::strerror(errno);
  }
  forget_variables();
  return "executing " + failures;
}

base::UniqueFd memory_file(const char* name, std::string_view bytes, std::string& why) {
  base::UniqueFd file(::memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING));
  if (!file.valid()) {
    why = std::string("memfd_create: ") + std::strerror(errno);
    return {};
  }
  std::size_t written = 0;
  while (written < bytes.size()) {
    const auto wrote = ::write(file.get(), bytes.data() + written, bytes.size() - written);
    if (wrote < 0 && errno == EINTR) continue;
    if (wrote <= 0) {
      why = std::string("writing a memory file: ") + std::strerror(errno);
      return {};
    }
    written += static_cast<std::size_t>(wrote);
  }
  // Whoever reads it finds exactly what was written, however many read it.
  ::fcntl(file.get(), F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL);
  return file;
}

std::optional<std::string> read_memory_file(int fd, std::size_t bound, std::string& why) {
  struct stat facts {};
  if (::fstat(fd, &facts) != 0 || !S_ISREG(facts.st_mode)) {
    why = "not a memory file";
    return std::nullopt;
  }
  if (facts.st_size < 0 || static_cast<std::uint64_t>(facts.st_size) > bound) {
    why = "a memory file over its bound";
    return std::nullopt;
  }
  std::string bytes(static_cast<std::size_t>(facts.st_size), '\0');
  std::size_t read = 0;
  while (read < bytes.size()) {
    const auto got =
        ::pread(fd, bytes.data() + read, bytes.size() - read, static_cast<off_t>(read));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) {
      why = "a memory file cut short";
      return std::nullopt;
    }
    read += static_cast<std::size_t>(got);
  }
  return bytes;
}

}  // namespace sb::supervisor
