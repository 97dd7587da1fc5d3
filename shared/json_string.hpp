// Text written as a JSON string (RFC 8259 §7), for documents the switchboard writes as
// text rather than through a tree: quoted, escaped, and every byte that is not part of
// well-formed UTF-8 (Unicode's Table 3-7) replaced with U+FFFD, so that whatever a caller
// chose (a tool's name, a request id) never makes the document invalid.
#pragma once

#include <string>
#include <string_view>

namespace sb {

void append_json_string(std::string& out, std::string_view text);

}  // namespace sb
