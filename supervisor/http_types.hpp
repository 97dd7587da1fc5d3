// Plain HTTP request and response types, so that routing and MCP handling never see Beast.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace sb::supervisor {

struct HttpRequest {
  std::string method;                        // "GET", "POST", ...
  std::string target;                        // path and query, as received
  std::optional<std::string> authorization;  // the first Authorization header
  std::string peer;                          // the peer label (spec §9.3)
  std::string body;
};

struct HttpResponse {
  int status = 200;
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
  std::string body_head;  // sent before `body`: see ReplyText
};

using Respond = std::function<void(HttpResponse)>;
// Called by the connection when its caller hangs up before the response.
using Abandon = std::function<void()>;

HttpResponse text_response(int status, std::string body);
HttpResponse json_response(int status, std::string body);
HttpResponse empty_response(int status);
HttpResponse unauthorized_response();
HttpResponse no_such_computer_response();
HttpResponse post_only_response();
HttpResponse method_not_allowed_response(std::string allow);

}  // namespace sb::supervisor
