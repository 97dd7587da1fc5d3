// A secret a dialer presents (a [[pty_attach]] block's grant, switchboard-connect's
// computer secret): read from its file before every dial, and fit to be sent in a header
// (docs/protocol.md, "Pod sockets", "Daemons").
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

namespace sb {

// The whole file, or false and the reason it cannot be read in `error` (the path and the
// OS error; never the content). At most 64 KiB: a secret is 64 hex characters.
bool read_secret_file(const std::filesystem::path& path, std::string& text, std::string& error);
// Whether `value` may be sent as an HTTP header value: no control characters except tab.
bool valid_header_value(std::string_view value);
// The secret in `path` as a dialer presents it: the file read whole and trimmed, fit to be
// sent in a header. nullopt, and why in `error`, otherwise.
std::optional<std::string> read_secret(const std::filesystem::path& path, std::string& error);

}  // namespace sb
