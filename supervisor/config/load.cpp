// The configuration loader (docs/configuration.md).
//
// Loading happens in two passes: first the TOML layer (syntax, unknown keys, types,
// missing required keys) turns the document into plain "raw" structs (raw.hpp); then
// validation walks them in one fixed order, parse_config's below (docs/configuration.md,
// "Checking a file"), so that the first failure reported is always the same one. Every
// message names the block and the key at fault and says what to write instead
// (docs/protocol.md, "Decisions").
#include "supervisor/config/load.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "shared/text.hpp"
#include "supervisor/config/config.hpp"
#include "supervisor/config/raw.hpp"
#include "supervisor/config/rules.hpp"

namespace sb::config {

FileRead read_whole_file(const std::filesystem::path& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return {{}, errno};
  FileRead out;
  char buffer[8192];
  for (;;) {
    const ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n > 0) {
      out.content.append(buffer, static_cast<std::size_t>(n));
    } else if (n == 0) {
      break;
    } else if (errno != EINTR) {
      out.error = errno;
      break;
    }
  }
  ::close(fd);
  return out;
}

Config parse_config(std::string_view toml_text, std::string_view home) {
  const RawFile raw = decode_toml(toml_text);
  Config config;
  apply_listen(raw, config);
  if (raw.max_inflight) {
    config.max_inflight =
        checked_max_inflight(*raw.max_inflight, "", "the default cap of each computer");
  }
  config.timeouts = build_timeouts(raw.timeouts);
  config.limits = build_limits(raw.limits);
  config.trust_peer_headers = raw.trust_peer_headers.value_or(true);
  config.control_socket = build_control_socket(raw, home);
  config.metrics_listen = build_metrics_listen(raw);
  config.audit_args = raw.audit_args;
  if (raw.audit_path) config.audit_path = expand_home(*raw.audit_path, home);
  build_computers(raw, config);
  build_oauth(raw, config, home);
  build_telemetry(raw, config, home);
  build_clients(raw, config);
  build_pods(raw, config, home);
  config.allowed_origins = build_allowed_origins(raw);
  mark_sole_callers(config);
  return config;
}

Config load_config_file(const std::filesystem::path& path, std::string_view home) {
  const FileRead file = read_whole_file(path);
  if (file.error != 0) {
    throw ConfigError("reading " + path.string() + ": " + std::strerror(file.error));
  }
  try {
    return parse_config(file.content, home);
  } catch (const ConfigError& error) {
    throw ConfigError("in " + path.string() + ": " + error.what());
  }
}

}  // namespace sb::config
