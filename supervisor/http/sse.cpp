#include "supervisor/http/sse.hpp"

#include <charconv>
#include <string>

namespace sb::supervisor {
namespace {

std::size_t line_break(std::string_view part, std::size_t from) {
  while (from < part.size() && part[from] != '\r' && part[from] != '\n') ++from;
  return from;
}

}  // namespace

void EventData::append(std::string& event, std::string_view part) {
  if (part.empty()) return;
  std::size_t at = after_cr_ && part.front() == '\n' ? 1 : 0;
  after_cr_ = false;
  while (at < part.size()) {
    const std::size_t line_end = line_break(part, at);
    event.append(part.substr(at, line_end - at));
    if (line_end == part.size()) return;
    event += "\ndata: ";
    at = line_end + 1;
    if (part[line_end] != '\r') continue;
    if (at == part.size()) after_cr_ = true;
    if (at < part.size() && part[at] == '\n') ++at;
  }
}

std::string event_opening(std::string_view id) {
  if (id.empty()) return std::string(kEventOpening);
  std::string opening = "id: ";
  opening += id;
  opening += '\n';
  opening += kEventOpening;
  return opening;
}

std::string sse_event(std::string_view head, std::string_view body, std::string_view id) {
  std::string event = event_opening(id);
  event.reserve(event.size() + head.size() + body.size() + 2);
  EventData data;
  data.append(event, head);
  data.append(event, body);
  event += "\n\n";
  return event;
}

std::string priming_event(std::string_view id) {
  std::string event = "id: ";
  event += id;
  event += "\nretry: ";
  event += std::to_string(kResumeAfterMs);
  event += "\ndata: \n\n";
  return event;
}

std::string chunk(std::string_view data) {
  char size[17];
  const auto end = std::to_chars(size, size + sizeof size, data.size(), 16).ptr;
  std::string framed(size, end);
  framed.reserve(framed.size() + data.size() + 4);
  framed += "\r\n";
  framed += data;
  framed += "\r\n";
  return framed;
}

}  // namespace sb::supervisor
