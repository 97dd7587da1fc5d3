#include "supervisor/http/types.hpp"

namespace sb::supervisor {
namespace {
constexpr const char* kTextPlain = "text/plain; charset=utf-8";
}

std::string_view request_path(std::string_view target) {
  return target.substr(0, target.find('?'));
}

HttpResponse text_response(int status, std::string body) {
  return HttpResponse{status, {{"Content-Type", kTextPlain}}, std::move(body)};
}

HttpResponse json_response(int status, std::string body) {
  return HttpResponse{status, {{"Content-Type", "application/json"}}, std::move(body)};
}

HttpResponse empty_response(int status) {
  return HttpResponse{status, {}, {}};
}

HttpResponse unauthorized_response() {
  auto response = text_response(401, "unauthorized");
  response.headers.emplace_back("WWW-Authenticate", R"(Bearer realm="openab-sb")");
  return response;
}

// Byte-identical for "no such computer" and "not yours": that is the point of it.
HttpResponse no_such_computer_response() {
  return text_response(404, "no such computer");
}

HttpResponse post_only_response() {
  auto response = text_response(405, "POST only");
  response.headers.emplace_back("Allow", "POST");
  return response;
}

HttpResponse method_not_allowed_response(std::string allow) {
  auto response = empty_response(405);
  response.headers.emplace_back("Allow", std::move(allow));
  return response;
}

}  // namespace sb::supervisor
