// What `switchboard check` says about a valid file beyond "ok": unused computers,
// wildcard grants, secret files it cannot use.
#include "supervisor/config/config.hpp"

#include <cstring>

#include "supervisor/config/load.hpp"
#include "supervisor/config/messages.hpp"

namespace sb::config {

CheckReport check_report(const Config& config) {
  CheckReport report;
  int warnings = 0;
  for (const std::string& name : config.unused_computers()) {
    report.stderr_lines.push_back("warning: [[computer]] " + in_quotes(name) +
                                  ": no [[client]] and no [[pty_attach]] may use it; name it in "
                                  "a client's `computers` or remove the block");
    ++warnings;
  }
  for (const std::string& name : config.wildcard_clients()) {
    report.stderr_lines.push_back("note: [[client]] " + in_quotes(name) +
                                  " has computers = { \"*\" = ... }: it reaches every computer, "
                                  "including ones added later");
  }
  for (const Pod& attach : config.pods) {
    const std::string owner = "warning: [[pty_attach]] " + in_quotes(attach.name) + ": ";
    const FileRead file = read_whole_file(attach.secret_file);
    if (file.error != 0) {
      report.stderr_lines.push_back(owner + "cannot read secret_file " +
                                    in_quotes(attach.secret_file.native()) + ": " +
                                    std::strerror(file.error));
      ++warnings;
    } else if (file.content.find_first_not_of(" \t\r\n\f\v") == std::string::npos) {
      report.stderr_lines.push_back(owner + "secret_file " +
                                    in_quotes(attach.secret_file.native()) +
                                    " is empty; put the attach secret from the pod in it");
      ++warnings;
    }
  }
  report.summary = "ok: listen " + config.listen_display() + ", " +
                   std::to_string(config.computers.size()) + " computer(s), " +
                   std::to_string(config.clients.size()) + " client(s), " +
                   std::to_string(config.pods.size()) + " pty attach(es)";
  if (warnings > 0) report.summary += ", " + std::to_string(warnings) + " warning(s)";
  return report;
}

}  // namespace sb::config
