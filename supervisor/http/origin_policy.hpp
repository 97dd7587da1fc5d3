// Which browser origins may use the switchboard (docs/protocol.md, "Origin and CORS"). A
// request with an Origin header comes from a web page; one from a page the operator did not
// name could be a DNS-rebinding attack on a loopback listener, so it is refused before
// anything else. Loopback pages (a local MCP inspector) and the `allowed_origins` are let
// through and get the CORS headers a browser needs. The bearer token still guards every
// route: CORS only lets a page that holds one read the answers.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "supervisor/config/config.hpp"
#include "supervisor/http/types.hpp"

namespace sb::supervisor {

// http:// or https:// with host localhost, 127.0.0.1 or [::1], any port.
bool loopback_origin(std::string_view origin);
bool origin_allowed(const config::Config& config, std::string_view origin);

// Headers every response to an allowed origin carries.
std::vector<std::pair<std::string, std::string>> cors_headers(std::string_view origin);
// The answer to an OPTIONS preflight on an MCP route from an allowed origin.
HttpResponse preflight_response(std::string_view origin);
HttpResponse forbidden_origin_response();

}  // namespace sb::supervisor
