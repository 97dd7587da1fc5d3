#include "tests/support/switchboard_process.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <openssl/evp.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <random>
#include <sstream>
#include <stdexcept>

#include "ipc/spawn.hpp"
#include "tests/support/http_client.hpp"
#include "tests/support/wait.hpp"

extern char** environ;

namespace sbtest {

using json = nlohmann::json;

fs::path bin_dir() {
  return fs::path(SWITCHBOARD_BIN_DIR);
}

// ---- TempDir ----

TempDir::TempDir() {
  std::string pattern = (fs::temp_directory_path() / "sb-e2e-XXXXXX").string();
  if (!::mkdtemp(pattern.data())) throw std::runtime_error("mkdtemp failed");
  path_ = pattern;
}

TempDir::~TempDir() {
  if (std::getenv("SB_E2E_KEEP")) return;
  std::error_code ignored;
  fs::remove_all(path_, ignored);
}

// ---- ports and secrets ----

int free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) throw std::runtime_error("socket() failed");
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = 0;
  socklen_t length = sizeof address;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
    ::close(fd);
    throw std::runtime_error("cannot find a free port");
  }
  ::close(fd);
  return ntohs(address.sin_port);
}

std::string verifier_of(const std::string& secret) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  EVP_Digest(secret.data(), secret.size(), digest, &length, EVP_sha256(), nullptr);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out = "sha256:";
  for (unsigned int i = 0; i < length; ++i) {
    out += kHex[digest[i] >> 4];
    out += kHex[digest[i] & 15];
  }
  return out;
}

Secret new_secret() {
  static std::mt19937_64 generator{std::random_device{}()};
  static constexpr char kHex[] = "0123456789abcdef";
  std::string secret;
  for (int i = 0; i < 64; ++i) secret += kHex[generator() & 15];
  return Secret{secret, verifier_of(secret)};
}

// ---- ConfigBuilder ----

namespace {
std::string toml_string(const std::string& text) {
  return json(text).dump();
}
}  // namespace

ConfigBuilder::ConfigBuilder() {
  timeouts(20, 5, {{"slow", 1}});
}

ConfigBuilder& ConfigBuilder::set(std::string key, std::string toml_value) {
  top_.push_back(key + " = " + toml_value);
  return *this;
}

ConfigBuilder& ConfigBuilder::timeouts(int default_secs, int control_secs,
                                       std::map<std::string, int> tools) {
  default_secs_ = default_secs;
  control_secs_ = control_secs;
  tool_timeouts_ = std::move(tools);
  return *this;
}

ConfigBuilder& ConfigBuilder::timeout_setting(std::string key, int secs) {
  timeout_settings_[std::move(key)] = secs;
  return *this;
}

ConfigBuilder& ConfigBuilder::allowed_origins(const std::vector<std::string>& origins) {
  std::string list = "[";
  for (std::size_t i = 0; i < origins.size(); ++i)
    list += (i ? ", " : "") + toml_string(origins[i]);
  return set("allowed_origins", list + "]");
}

ConfigBuilder& ConfigBuilder::vm(const Secret& secret) {
  computers_.push_back("[vm]\nsecret_sha256 = " + toml_string(secret.verifier) + "\n");
  return *this;
}

ConfigBuilder& ConfigBuilder::computer(std::string name, const Secret& secret,
                                       std::optional<int> max_inflight) {
  std::string block = "[[computer]]\nname = " + toml_string(name) +
                      "\nsecret_sha256 = " + toml_string(secret.verifier) + "\n";
  if (max_inflight) block += "max_inflight = " + std::to_string(*max_inflight) + "\n";
  computers_.push_back(block);
  return *this;
}

ConfigBuilder& ConfigBuilder::client(std::string name, const Secret& token,
                                     std::string computers_toml,
                                     std::optional<std::string> default_computer,
                                     std::optional<int> max_inflight) {
  std::string block = "[[client]]\nname = " + toml_string(name) +
                      "\ntoken_sha256 = " + toml_string(token.verifier) +
                      "\ncomputers = " + computers_toml + "\n";
  if (default_computer) block += "default_computer = " + toml_string(*default_computer) + "\n";
  if (max_inflight) block += "max_inflight = " + std::to_string(*max_inflight) + "\n";
  clients_.push_back(block);
  return *this;
}

ConfigBuilder& ConfigBuilder::client_v1(std::string name, const Secret& token,
                                        std::vector<std::string> tools,
                                        std::optional<int> max_inflight) {
  std::string block = "[[client]]\nname = " + toml_string(name) +
                      "\ntoken_sha256 = " + toml_string(token.verifier) + "\ntools = [";
  for (std::size_t i = 0; i < tools.size(); ++i) block += (i ? ", " : "") + toml_string(tools[i]);
  block += "]\n";
  if (max_inflight) block += "max_inflight = " + std::to_string(*max_inflight) + "\n";
  clients_.push_back(block);
  return *this;
}

std::string ConfigBuilder::toml() const {
  std::string out;
  for (const auto& line : top_) out += line + "\n";
  std::ostringstream timeouts;
  timeouts << "[timeouts]\ndefault_secs = " << default_secs_ << "\ncontrol_secs = " << control_secs_
           << "\n";
  for (const auto& [key, secs] : timeout_settings_) timeouts << key << " = " << secs << "\n";
  if (!tool_timeouts_.empty()) {
    timeouts << "[timeouts.tools]\n";
    for (const auto& [name, secs] : tool_timeouts_)
      timeouts << toml_string(name) << " = " << secs << "\n";
  }
  out += "\n" + timeouts.str();
  for (const auto& block : computers_) out += "\n" + block;
  for (const auto& block : clients_) out += "\n" + block;
  for (const auto& block : blocks_) out += "\n" + block;
  return out;
}

ConfigBuilder& ConfigBuilder::block(std::string toml_table) {
  blocks_.push_back(std::move(toml_table));
  return *this;
}

// ---- processes ----

namespace {

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

// Started with the project's own spawn helper (ipc/spawn.hpp): nothing of this test
// process (callers' sockets, fake computers' sockets) leaks into a child, where a copy
// would keep a connection open after the test closes it.
pid_t spawn_with_output(const std::vector<std::string>& argv, const fs::path& out,
                        const fs::path& err) {
  const sb::ipc::UniqueFd input(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  const sb::ipc::UniqueFd output(
      ::open(out.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600));
  const sb::ipc::UniqueFd errors(
      ::open(err.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600));
  if (!input.valid() || !output.valid() || !errors.valid())
    throw std::runtime_error("opening the output files of " + argv[0] + ": " +
                             std::strerror(errno));
  auto spawned = sb::ipc::spawn(sb::ipc::SpawnRequest{
      .program = argv[0],
      .args = std::vector<std::string>(argv.begin() + 1, argv.end()),
      .descriptors = {{input.get(), STDIN_FILENO},
                      {output.get(), STDOUT_FILENO},
                      {errors.get(), STDERR_FILENO}},
  });
  if (auto* failure = std::get_if<std::string>(&spawned))
    throw std::runtime_error("starting " + argv[0] + ": " + *failure);
  // The caller reaps it by pid; the pidfd closes here.
  return std::get<sb::ipc::Spawned>(spawned).pid;
}

// waitpid with a deadline: the exit status, or nullopt if still running.
std::optional<int> reap_within(pid_t pid, std::chrono::milliseconds timeout) {
  std::optional<int> status;
  eventually(
      [&] {
        int raw = 0;
        const pid_t done = ::waitpid(pid, &raw, WNOHANG);
        if (done == pid) {
          status = raw;
          return true;
        }
        return done < 0;  // not our child any more: nothing to wait for
      },
      timeout);
  return status;
}

}  // namespace

CommandResult run_command(const std::vector<std::string>& argv, const fs::path& scratch_dir,
                          std::chrono::milliseconds timeout) {
  static int counter = 0;
  const std::string stem = "cmd-" + std::to_string(::getpid()) + "-" + std::to_string(++counter);
  const fs::path out = scratch_dir / (stem + ".out");
  const fs::path err = scratch_dir / (stem + ".err");
  const pid_t pid = spawn_with_output(argv, out, err);
  CommandResult result;
  auto status = reap_within(pid, timeout);
  if (!status) {
    ::kill(pid, SIGKILL);
    status = reap_within(pid, std::chrono::seconds(5));
  } else if (WIFEXITED(*status)) {
    result.exit_code = WEXITSTATUS(*status);
  }
  result.out = read_file(out);
  result.err = read_file(err);
  std::error_code ignored;
  fs::remove(out, ignored);
  fs::remove(err, ignored);
  return result;
}

ScopedEnv::ScopedEnv(std::string name, const std::string& value) : name_(std::move(name)) {
  if (const char* old = std::getenv(name_.c_str())) previous_ = old;
  ::setenv(name_.c_str(), value.c_str(), 1);
}

ScopedEnv::~ScopedEnv() {
  if (previous_) {
    ::setenv(name_.c_str(), previous_->c_str(), 1);
  } else {
    ::unsetenv(name_.c_str());
  }
}

bool process_alive(pid_t pid) {
  const char state = process_state(pid);
  return state != 0 && state != 'Z' && state != 'X';
}

char process_state(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text;
  if (!std::getline(stat, text)) return 0;
  const auto paren = text.rfind(')');
  if (paren == std::string::npos || paren + 2 >= text.size()) return 0;
  return text[paren + 2];
}

pid_t parent_pid(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text;
  if (!std::getline(stat, text)) return -1;
  const auto paren = text.rfind(')');
  std::istringstream rest(text.substr(paren + 2));
  char state = 0;
  pid_t parent = -1;
  rest >> state >> parent;
  return parent;
}

SwitchboardProcess::SwitchboardProcess(const ConfigBuilder& config, fs::path program)
    : program_(std::move(program)), body_(config.toml()), audit_(dir_.path() / "audit.jsonl") {
  spawn();
}

void SwitchboardProcess::write_file(const std::string& toml) {
  const std::string text = "listen = " + toml_string("127.0.0.1:" + std::to_string(port_)) +
                           "\naudit_path = " + toml_string(audit_path().string()) +
                           "\ncontrol_socket = " + toml_string(control_socket().string()) + "\n" +
                           toml;
  // Written aside and renamed, so a reload never reads half a file.
  const fs::path temporary = dir() / "switchboard.toml.new";
  {
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    out << text;
  }
  fs::rename(temporary, config_path());
}

void SwitchboardProcess::restart() {
  if (pid_ > 0) throw std::runtime_error("restart: the switchboard is still running");
  spawn();
}

void SwitchboardProcess::spawn() {
  // The free port may be taken by someone else before the supervisor binds it: retry.
  for (int attempt = 0; attempt < 3; ++attempt) {
    port_ = free_port();
    write_file(body_);
    pid_ = spawn_with_output({program_.string(), "serve", "-c", config_path().string()},
                             dir() / "stdout.log", dir() / "stderr.log");
    bool healthy = false;
    std::optional<int> exited;
    eventually(
        [&] {
          int raw = 0;
          if (::waitpid(pid_, &raw, WNOHANG) == pid_) {
            exited = raw;
            return true;
          }
          try {
            healthy = http_get(port_, "/healthz").status == 200;
          } catch (const std::exception&) {
            healthy = false;
          }
          return healthy;
        },
        std::chrono::seconds(15));
    if (healthy) return;
    if (!exited) {
      ::kill(pid_, SIGKILL);
      reap_within(pid_, std::chrono::seconds(5));
    }
    pid_ = -1;
    if (stderr_text().find("binding") == std::string::npos) break;
  }
  throw std::runtime_error("switchboard did not become healthy; stderr:\n" + stderr_text());
}

SwitchboardProcess::~SwitchboardProcess() {
  // A worker a test left stopped would never exit.
  for (pid_t worker : seen_workers_) ::kill(worker, SIGCONT);
  if (pid_ > 0) {
    ::kill(pid_, SIGTERM);
    if (!reap_within(pid_, std::chrono::seconds(8))) {
      ::kill(pid_, SIGKILL);
      reap_within(pid_, std::chrono::seconds(5));
    }
    pid_ = -1;
  }
  for (pid_t worker : seen_workers_) {
    if (!eventually([&] { return !process_alive(worker); }, std::chrono::seconds(5)))
      ::kill(worker, SIGKILL);
  }
  if (::testing::Test::HasFailure()) {
    std::cerr << "---- switchboard stderr (" << dir() << ") ----\n"
              << stderr_text() << "---- audit ----\n"
              << audit_.text() << "----\n";
  }
}

std::string SwitchboardProcess::stderr_text() const {
  return read_file(dir() / "stderr.log");
}

void SwitchboardProcess::write_config(const ConfigBuilder& config) {
  body_ = config.toml();
  write_file(body_);
}

void SwitchboardProcess::reload(const ConfigBuilder& config) {
  const std::size_t before = audit_.count("config_reloaded");
  write_config(config);
  send_signal(SIGHUP);
  if (!audit_.wait_for_count("config_reloaded", before + 1)) {
    throw std::runtime_error("reload was not applied; stderr:\n" + stderr_text());
  }
}

void SwitchboardProcess::send_signal(int signal) const {
  if (pid_ > 0) ::kill(pid_, signal);
}

std::optional<int> SwitchboardProcess::wait_exit(std::chrono::milliseconds timeout) {
  if (pid_ <= 0) return std::nullopt;
  const auto status = reap_within(pid_, timeout);
  if (!status) return std::nullopt;
  pid_ = -1;
  if (!WIFEXITED(*status)) return -WTERMSIG(*status);
  return WEXITSTATUS(*status);
}

CommandResult SwitchboardProcess::run_cli(std::vector<std::string> args, bool with_config) const {
  std::vector<std::string> argv{(bin_dir() / "switchboard").string()};
  argv.insert(argv.end(), args.begin(), args.end());
  if (with_config) {
    argv.push_back("-c");
    argv.push_back(config_path().string());
  }
  return run_command(argv, dir());
}

void SwitchboardProcess::remember_workers(const json& rows) const {
  for (const auto& row : rows) {
    const pid_t pid = row.value("pid", 0);
    if (pid > 0 &&
        std::find(seen_workers_.begin(), seen_workers_.end(), pid) == seen_workers_.end())
      seen_workers_.push_back(pid);
  }
}

json SwitchboardProcess::workers() const {
  const auto result = run_cli({"workers", "--json"});
  if (result.exit_code != 0) {
    throw std::runtime_error("switchboard workers --json failed (" +
                             std::to_string(result.exit_code) + "): " + result.err);
  }
  json parsed = json::parse(result.out, nullptr, false);
  if (parsed.is_discarded() || !parsed.contains("workers")) {
    throw std::runtime_error("switchboard workers --json printed: " + result.out);
  }
  remember_workers(parsed["workers"]);
  return parsed["workers"];
}

json SwitchboardProcess::worker(const std::string& computer) const {
  for (const auto& row : workers()) {
    if (row.value("computer", "") == computer) return row;
  }
  throw std::runtime_error("no worker row for " + computer);
}

}  // namespace sbtest
