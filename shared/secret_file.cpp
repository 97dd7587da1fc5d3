#include "shared/secret_file.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "shared/text.hpp"

namespace sb {
namespace {

constexpr std::size_t kMaxSecretFileBytes = 64 * 1024;

}  // namespace

bool read_secret_file(const std::filesystem::path& path, std::string& text, std::string& error) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    error = "cannot read secret_file " + path.string() + ": " + std::strerror(errno);
    return false;
  }
  char chunk[4096];
  for (;;) {
    const ssize_t n = ::read(fd, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      error = "cannot read secret_file " + path.string() + ": " + std::strerror(errno);
      ::close(fd);
      return false;
    }
    if (n == 0) break;
    text.append(chunk, static_cast<std::size_t>(n));
    if (text.size() > kMaxSecretFileBytes) {
      error = "secret_file " + path.string() + " is larger than 64 KiB; it should hold one secret";
      ::close(fd);
      return false;
    }
  }
  ::close(fd);
  return true;
}

bool valid_header_value(std::string_view value) {
  return std::none_of(value.begin(), value.end(), [](char c) {
    const auto byte = static_cast<unsigned char>(c);
    return (byte < 0x20 && byte != '\t') || byte == 0x7f;
  });
}

std::optional<std::string> read_secret(const std::filesystem::path& path, std::string& error) {
  std::string text;
  if (!read_secret_file(path, text, error)) return std::nullopt;
  std::string secret(trim(text));
  if (!valid_header_value(secret)) {
    error = "secret_file " + path.string() + " holds characters invalid in a header";
    return std::nullopt;
  }
  return secret;
}

}  // namespace sb
