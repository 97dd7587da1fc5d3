#include "harness/config_builder.hpp"

#include <nlohmann/json.hpp>
#include <sstream>

#include "shared/verifier.hpp"

namespace harness {

using json = nlohmann::json;

std::string verifier_of(const std::string& secret) {
  return sb::render_verifier(sb::verifier_of(secret));
}

Secret new_secret() {
  std::string secret = sb::generate_secret();
  return Secret{secret, verifier_of(secret)};
}

std::string toml_string(const std::string& text) {
  return json(text).dump();
}

ConfigBuilder::ConfigBuilder() {
  timeouts(20, 5, {{"slow", 1}});
}

ConfigBuilder& ConfigBuilder::set(std::string key, std::string toml_value) {
  top_.push_back(std::move(key).append(" = ").append(toml_value));
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

namespace {

// `[a, b]` with each item quoted. Streams throughout: g++ 12 at -O3 warns falsely
// (-Wrestrict) on some `"literal" + std::string` chains.
std::string toml_list(const std::vector<std::string>& items) {
  std::ostringstream list;
  list << "[";
  for (std::size_t i = 0; i < items.size(); ++i) list << (i ? ", " : "") << toml_string(items[i]);
  list << "]";
  return list.str();
}

void add_max_inflight(std::ostringstream& block, std::optional<int> max_inflight) {
  if (max_inflight) block << "max_inflight = " << *max_inflight << "\n";
}

}  // namespace

ConfigBuilder& ConfigBuilder::allowed_origins(const std::vector<std::string>& origins) {
  return set("allowed_origins", toml_list(origins));
}

ConfigBuilder& ConfigBuilder::vm(const Secret& secret) {
  std::ostringstream block;
  block << "[vm]\nsecret_sha256 = " << toml_string(secret.verifier) << "\n";
  computers_.push_back(block.str());
  return *this;
}

ConfigBuilder& ConfigBuilder::computer(std::string name, const Secret& secret,
                                       std::optional<int> max_inflight) {
  std::ostringstream block;
  block << "[[computer]]\nname = " << toml_string(name)
        << "\nsecret_sha256 = " << toml_string(secret.verifier) << "\n";
  add_max_inflight(block, max_inflight);
  computers_.push_back(block.str());
  return *this;
}

ConfigBuilder& ConfigBuilder::client(std::string name, const Secret& token,
                                     std::string computers_toml,
                                     std::optional<std::string> default_computer,
                                     std::optional<int> max_inflight) {
  std::ostringstream block;
  block << "[[client]]\nname = " << toml_string(name)
        << "\ntoken_sha256 = " << toml_string(token.verifier) << "\ncomputers = " << computers_toml
        << "\n";
  if (default_computer) block << "default_computer = " << toml_string(*default_computer) << "\n";
  add_max_inflight(block, max_inflight);
  clients_.push_back(block.str());
  return *this;
}

ConfigBuilder& ConfigBuilder::client_key(const std::string& key, const std::string& toml_value) {
  clients_.back() += key + " = " + toml_value + "\n";
  return *this;
}

ConfigBuilder& ConfigBuilder::client_v1(std::string name, const Secret& token,
                                        std::vector<std::string> tools,
                                        std::optional<int> max_inflight) {
  std::ostringstream block;
  block << "[[client]]\nname = " << toml_string(name)
        << "\ntoken_sha256 = " << toml_string(token.verifier) << "\ntools = " << toml_list(tools)
        << "\n";
  add_max_inflight(block, max_inflight);
  clients_.push_back(block.str());
  return *this;
}

std::string ConfigBuilder::toml() const {
  std::ostringstream out;
  for (const auto& line : top_) out << line << "\n";
  out << "\n[timeouts]\ndefault_secs = " << default_secs_ << "\ncontrol_secs = " << control_secs_
      << "\n";
  for (const auto& [key, secs] : timeout_settings_) out << key << " = " << secs << "\n";
  if (!tool_timeouts_.empty()) {
    out << "[timeouts.tools]\n";
    for (const auto& [name, secs] : tool_timeouts_)
      out << toml_string(name) << " = " << secs << "\n";
  }
  for (const auto* blocks : {&computers_, &clients_, &blocks_}) {
    for (const auto& block : *blocks) out << "\n" << block;
  }
  return out.str();
}

ConfigBuilder& ConfigBuilder::block(std::string toml_table) {
  blocks_.push_back(std::move(toml_table));
  return *this;
}

}  // namespace harness
