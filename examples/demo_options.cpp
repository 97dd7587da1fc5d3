#include "examples/demo_options.hpp"

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <variant>
#include <vector>

#include "shared/text.hpp"

namespace demo {
namespace {

// The switchboard's attach URL, parsed by the project's one URL parser.
sb::DialTarget parse_ws_url(const std::string& url) {
  auto parsed = sb::parse_dial_target(url);
  if (auto* problem = std::get_if<std::string>(&parsed)) throw UsageError("--url " + *problem);
  const sb::DialTarget target = std::get<sb::DialTarget>(parsed);
  if (target.tls)
    throw UsageError(
        "wss:// is not supported: this demo speaks plain ws:// only. Run it on the "
        "switchboard's machine (e.g. ws://127.0.0.1:8790/vm/attach); to attach across a "
        "network, use a daemon that speaks TLS");
  return target;
}

std::string getenv_or_empty(const char* name) {
  const char* value = std::getenv(name);
  return value ? value : "";
}

}  // namespace

Options parse_options(int argc, char** argv) {
  Options options;
  options.url = getenv_or_empty("SB_URL");
  if (const std::string file = getenv_or_empty("SB_SECRET_FILE"); !file.empty())
    options.secret_file = file;

  const std::vector<std::string> words(argv + 1, argv + argc);
  for (std::size_t i = 0; i < words.size(); ++i) {
    const std::string& word = words[i];
    auto value = [&]() -> std::string {
      if (i + 1 == words.size()) throw UsageError(word + " needs a value");
      return words[++i];
    };
    if (word == "--help" || word == "-h") {
      options.help = true;
    } else if (word == "--version" || word == "-V") {
      options.version = true;
    } else if (word == "--url") {
      options.url = value();
    } else if (word == "--secret-file") {
      options.secret_file = value();
    } else if (word == "--stdio") {
      options.stdio = true;
    } else {
      throw UsageError("unexpected argument `" + word + "`");
    }
  }
  if (options.help || options.version || options.stdio) return options;

  if (options.url.empty()) throw UsageError("--url (or env SB_URL) is required");
  options.endpoint = parse_ws_url(options.url);
  if (options.secret_file) {
    options.secret_file = sb::expand_home(*options.secret_file, getenv_or_empty("HOME")).string();
  } else if (std::getenv("SB_SECRET") == nullptr) {
    throw UsageError("--secret-file (or env SB_SECRET_FILE or SB_SECRET) is required");
  }
  return options;
}

std::string read_secret(const Options& options) {
  if (!options.secret_file) {
    const std::string secret(sb::trim(getenv_or_empty("SB_SECRET")));
    if (secret.empty()) throw std::runtime_error("SB_SECRET is empty");
    return secret;
  }
  std::ifstream file(*options.secret_file);
  if (!file) throw std::runtime_error("cannot read secret file " + *options.secret_file);
  std::stringstream content;
  content << file.rdbuf();
  const std::string secret(sb::trim(content.str()));
  if (secret.empty()) throw std::runtime_error("secret file " + *options.secret_file + " is empty");
  return secret;
}

}  // namespace demo
