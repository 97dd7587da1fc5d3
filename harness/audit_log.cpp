#include "harness/audit_log.hpp"

#include <fstream>
#include <sstream>

#include "harness/wait.hpp"

namespace harness {

using json = nlohmann::json;

std::string AuditLog::text() const {
  std::ifstream in(path_, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

std::vector<json> AuditLog::lines() const {
  const std::string all = text();
  std::vector<json> out;
  std::size_t start = 0;
  for (std::size_t end = all.find('\n'); end != std::string::npos;
       start = end + 1, end = all.find('\n', start)) {
    const std::string line = all.substr(start, end - start);
    if (line.empty()) continue;
    json parsed = json::parse(line, nullptr, /*allow_exceptions=*/false);
    out.push_back(parsed.is_discarded() ? json(line) : std::move(parsed));
  }
  return out;
}

std::vector<json> AuditLog::events(std::string_view event, AuditPredicate extra) const {
  std::vector<json> out;
  for (auto& line : lines()) {
    if (!line.is_object() || line.value("event", "") != event) continue;
    if (extra && !extra(line)) continue;
    out.push_back(std::move(line));
  }
  return out;
}

std::optional<json> AuditLog::wait_for(std::string_view event, AuditPredicate extra,
                                       std::chrono::milliseconds timeout) const {
  std::optional<json> found;
  eventually(
      [&] {
        auto matching = events(event, extra);
        if (matching.empty()) return false;
        found = std::move(matching.front());
        return true;
      },
      timeout);
  return found;
}

bool AuditLog::wait_for_count(std::string_view event, std::size_t n, AuditPredicate extra,
                              std::chrono::milliseconds timeout) const {
  return eventually([&] { return events(event, extra).size() >= n; }, timeout);
}

AuditPredicate fields_equal(json fields) {
  return [fields = std::move(fields)](const json& line) {
    for (const auto& [key, value] : fields.items()) {
      if (!line.contains(key) || line[key] != value) return false;
    }
    return true;
  };
}

}  // namespace harness
