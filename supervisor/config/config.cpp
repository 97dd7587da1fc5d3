// The configuration loader (docs/configuration.md).
//
// Loading happens in two passes: first the TOML layer (syntax, unknown keys, types,
// missing required keys) turns the document into plain "raw" structs; then validation
// walks them in one fixed order (docs/configuration.md, "Checking a file"), so that the
// first failure reported is always the same one. Every message names the block and the key
// at fault and says what to write instead (docs/protocol.md, "Decisions").
#include "supervisor/config/config.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/un.h>
#include <unistd.h>

#include <toml++/toml.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <initializer_list>
#include <utility>

#include "shared/text.hpp"

namespace sb::config {
namespace {

constexpr std::int64_t kMaxInflightLimit = 64;
constexpr std::int64_t kTimeoutLimitSecs = 600;
constexpr std::int64_t kMaxTotalLimitSecs = 86400;
constexpr std::string_view kWildcard = "*";

// ---------------------------------------------------------------------------------------
// Error framing

// A name as a double-quoted string with escapes, so that an odd name (a space, a quote, a
// control character) is still unambiguous inside a message.
std::string in_quotes(std::string_view text) {
  std::string out = "\"";
  for (const unsigned char c : text) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\0':
        out += "\\0";
        break;
      default:
        if (c < 0x20 || c == 0x7f) {
          char escaped[8];
          std::snprintf(escaped, sizeof escaped, "\\u{%x}", c);
          out += escaped;
        } else {
          out.push_back(static_cast<char>(c));
        }
    }
  }
  out += '"';
  return out;
}

// `[[client]] "name"`: the owner prefix of a block's messages.
std::string block_owner(std::string_view block, std::string_view name) {
  return std::string(block) + " " + in_quotes(name);
}

// The chain is joined with ": ", outermost first; an empty owner is left out.
[[noreturn]] void fail(std::string_view owner, std::string_view problem) {
  if (owner.empty()) throw ConfigError(std::string(problem));
  throw ConfigError(std::string(owner) + ": " + std::string(problem));
}

std::string join(const std::vector<std::string>& items, std::string_view separator) {
  std::string out;
  for (const auto& item : items) {
    if (!out.empty()) out += separator;
    out += item;
  }
  return out;
}

// ---------------------------------------------------------------------------------------
// The TOML layer: typed reads, unknown keys, required keys

std::string position_of(const toml::source_region& region) {
  return "line " + std::to_string(region.begin.line) + ", column " +
         std::to_string(region.begin.column);
}

std::string_view type_name(const toml::node& node) {
  switch (node.type()) {
    case toml::node_type::string:
      return "a string";
    case toml::node_type::integer:
      return "an integer";
    case toml::node_type::floating_point:
      return "a float";
    case toml::node_type::boolean:
      return "a boolean";
    case toml::node_type::table:
      return "a table";
    case toml::node_type::array:
      return "an array";
    case toml::node_type::date:
    case toml::node_type::time:
    case toml::node_type::date_time:
      return "a date/time";
    default:
      return "nothing";
  }
}

// One TOML table of a known shape. `owner` prefixes its messages ("" at top level).
struct Fields {
  const toml::table& table;
  std::string owner;
  std::string_view block;  // how the table is written, for unknown-key messages

  [[noreturn]] void wrong_type(std::string_view key, const toml::node& node,
                               std::string_view expected) const {
    fail(owner, "`" + std::string(key) + "` must be " + std::string(expected) + ", not " +
                    std::string(type_name(node)) + " (" + position_of(node.source()) + ")");
  }

  // Strict parsing: a misspelt key must not be silently ignored (it may be a policy).
  void allow_only(std::initializer_list<std::string_view> known) const {
    for (auto&& [key, node] : table) {
      if (std::find(known.begin(), known.end(), key.str()) != known.end()) continue;
      std::string names;
      for (const auto name : known) names += (names.empty() ? "" : ", ") + std::string(name);
      fail(owner, "unknown key `" + std::string(key.str()) + "` (" + position_of(key.source()) +
                      "); " + std::string(block) + " takes only: " + names);
    }
  }

  const toml::node* find(std::string_view key) const { return table.get(key); }

  std::optional<std::string> string(std::string_view key) const {
    const toml::node* node = find(key);
    if (!node) return std::nullopt;
    if (!node->is_string()) wrong_type(key, *node, "a string");
    return node->as_string()->get();
  }

  std::string required_string(std::string_view key) const {
    if (auto value = string(key)) return *std::move(value);
    fail(owner,
         "missing required key `" + std::string(key) + "` (" + position_of(table.source()) + ")");
  }

  std::optional<std::int64_t> integer(std::string_view key) const {
    const toml::node* node = find(key);
    if (!node) return std::nullopt;
    if (!node->is_integer()) wrong_type(key, *node, "an integer");
    return node->as_integer()->get();
  }

  std::optional<bool> boolean(std::string_view key) const {
    const toml::node* node = find(key);
    if (!node) return std::nullopt;
    if (!node->is_boolean()) wrong_type(key, *node, "true or false");
    return node->as_boolean()->get();
  }

  std::vector<std::string> strings_of(std::string_view key, const toml::node& node) const {
    static constexpr std::string_view kExpected = "an array of strings";
    if (!node.is_array()) wrong_type(key, node, kExpected);
    std::vector<std::string> out;
    for (const toml::node& element : *node.as_array()) {
      if (!element.is_string()) wrong_type(key, element, std::string(kExpected) + " only");
      out.push_back(element.as_string()->get());
    }
    return out;
  }

  std::optional<std::vector<std::string>> strings(std::string_view key) const {
    const toml::node* node = find(key);
    if (!node) return std::nullopt;
    return strings_of(key, *node);
  }

  std::vector<std::string> required_strings(std::string_view key) const {
    if (auto value = strings(key)) return *std::move(value);
    fail(owner,
         "missing required key `" + std::string(key) + "` (" + position_of(table.source()) + ")");
  }

  const toml::table* subtable(std::string_view key, std::string_view written_as) const {
    const toml::node* node = find(key);
    if (!node) return nullptr;
    if (!node->is_table())
      wrong_type(key, *node, "a table: write it as " + std::string(written_as));
    return node->as_table();
  }

  // `[[computer]]` and friends; an inline array of inline tables is the same thing in TOML.
  std::vector<const toml::table*> tables(std::string_view key) const {
    const toml::node* node = find(key);
    if (!node) return {};
    const std::string expected =
        "an array of tables: write each one as a [[" + std::string(key) + "]] block";
    if (!node->is_array()) wrong_type(key, *node, expected);
    std::vector<const toml::table*> out;
    for (const toml::node& element : *node->as_array()) {
      if (!element.is_table()) wrong_type(key, element, expected);
      out.push_back(element.as_table());
    }
    return out;
  }
};

// The owner of the n-th block while it is decoded: its name when it has a string one,
// otherwise its position, since there is nothing better to point at.
std::string decoding_owner(std::string_view block, const toml::table& table, std::size_t index) {
  if (const toml::node* name = table.get("name"); name && name->is_string()) {
    return block_owner(block, name->as_string()->get());
  }
  return std::string(block) + " #" + std::to_string(index + 1);
}

struct RawComputer {
  std::string name;
  std::string secret;
  std::optional<std::int64_t> max_inflight;
};

using RawComputerTable = std::map<std::string, std::vector<std::string>, std::less<>>;

struct RawClient {
  std::string name;
  std::string token;
  std::optional<std::vector<std::string>> tools;
  std::optional<RawComputerTable> computers;
  std::optional<std::string> default_computer;
  std::optional<std::int64_t> max_inflight;
};

struct RawPod {
  std::string name;
  std::string url;
  std::string secret_file;
  std::vector<std::string> tools;
  std::optional<std::string> computer;
  std::optional<std::int64_t> max_inflight;
  bool allow_insecure_transport = false;
};

struct RawTimeouts {
  std::optional<std::int64_t> default_secs;
  std::optional<std::int64_t> control_secs;
  std::optional<std::int64_t> max_total_secs;
  std::optional<std::int64_t> write_secs;
  std::optional<std::int64_t> idle_secs;
  std::map<std::string, std::int64_t, std::less<>> tools;  // ascending key order
};

struct RawLimits {
  std::optional<std::int64_t> max_connections;
  std::optional<std::int64_t> max_request_bytes;
  std::optional<std::int64_t> max_reply_buffer_mib;
};

struct RawFile {
  std::optional<std::string> listen;
  std::optional<bool> trust_peer_headers;
  bool allow_insecure_bind = false;
  std::optional<std::int64_t> max_inflight;
  bool audit_args = true;
  std::optional<std::string> audit_path;
  std::optional<std::string> control_socket;
  std::optional<std::string> metrics_listen;
  std::optional<std::vector<std::string>> allowed_origins;
  std::optional<std::string> vm_secret;  // set when the file has [vm]
  std::vector<RawComputer> computers;
  RawTimeouts timeouts;
  RawLimits limits;
  std::vector<RawClient> clients;
  std::vector<RawPod> pods;
};

RawTimeouts decode_timeouts(const toml::table& table) {
  const Fields fields{table, "[timeouts]", "[timeouts]"};
  fields.allow_only(
      {"default_secs", "control_secs", "max_total_secs", "write_secs", "idle_secs", "tools"});
  RawTimeouts out{fields.integer("default_secs"),   fields.integer("control_secs"),
                  fields.integer("max_total_secs"), fields.integer("write_secs"),
                  fields.integer("idle_secs"),      {}};
  if (const toml::table* tools = fields.subtable("tools", "[timeouts.tools]")) {
    // Free-form: any tool name is a key; only the values have a type.
    const Fields tool_fields{*tools, "[timeouts.tools]", "[timeouts.tools]"};
    for (auto&& [key, node] : *tools) {
      const std::string name(key.str());
      if (!node.is_integer()) tool_fields.wrong_type(name, node, "a number of seconds");
      out.tools.emplace(name, node.as_integer()->get());
    }
  }
  return out;
}

RawLimits decode_limits(const toml::table& table) {
  const Fields fields{table, "[limits]", "[limits]"};
  fields.allow_only({"max_connections", "max_request_bytes", "max_reply_buffer_mib"});
  return {fields.integer("max_connections"), fields.integer("max_request_bytes"),
          fields.integer("max_reply_buffer_mib")};
}

RawComputer decode_computer(const toml::table& table, std::size_t index) {
  const Fields fields{table, decoding_owner("[[computer]]", table, index), "a [[computer]]"};
  fields.allow_only({"name", "secret_sha256", "max_inflight"});
  return {fields.required_string("name"), fields.required_string("secret_sha256"),
          fields.integer("max_inflight")};
}

// The key a user most likely wrote when TOML turned it into nested tables: rpi1.local.
std::string dotted_key(std::string_view first, const toml::table& nested) {
  std::string out(first);
  const toml::table* table = &nested;
  while (table) {
    const toml::table* next = nullptr;
    for (auto&& [key, value] : *table) {
      out += "." + std::string(key.str());
      next = value.as_table();
      break;  // follow the first branch only: it is a hint, not a full rendering
    }
    table = next;
  }
  return out;
}

// A client's `computers`: free-form keys (computer names), each an array of tool names.
RawComputerTable decode_computer_table(const Fields& client, const toml::node& node) {
  if (!node.is_table()) {
    client.wrong_type("computers", node, "a table such as { macmini = [\"sys_info\"] }");
  }
  RawComputerTable out;
  for (auto&& [key, value] : *node.as_table()) {
    const std::string entry = "computers." + std::string(key.str());
    if (value.is_table()) {
      // The usual cause is a bare key with a dot (rpi1.local), which TOML reads as a
      // nested table; say so rather than only "wrong type".
      const std::string dotted = dotted_key(key.str(), *value.as_table());
      std::string dashed = dotted;
      std::replace(dashed.begin(), dashed.end(), '.', '-');
      fail(client.owner, "`" + entry + "` is a table, not a list of tools (" +
                             position_of(value.source()) + "): the bare key " + dotted +
                             " is a dotted key that makes a nested table, and a computer name "
                             "may not contain `.`; name the computer " +
                             dashed + " instead");
    }
    out.emplace(std::string(key.str()), client.strings_of(entry, value));
  }
  return out;
}

RawClient decode_client(const toml::table& table, std::size_t index) {
  const Fields fields{table, decoding_owner("[[client]]", table, index), "a [[client]]"};
  fields.allow_only(
      {"name", "token_sha256", "tools", "computers", "default_computer", "max_inflight"});
  RawClient out{fields.required_string("name"),    fields.required_string("token_sha256"),
                fields.strings("tools"),           std::nullopt,
                fields.string("default_computer"), fields.integer("max_inflight")};
  if (const toml::node* computers = fields.find("computers")) {
    out.computers = decode_computer_table(fields, *computers);
  }
  return out;
}

RawPod decode_pod(const toml::table& table, std::size_t index) {
  const Fields fields{table, decoding_owner("[[pty_attach]]", table, index), "a [[pty_attach]]"};
  fields.allow_only({"name", "url", "secret_file", "tools", "computer", "max_inflight",
                     "allow_insecure_transport"});
  return {fields.required_string("name"),
          fields.required_string("url"),
          fields.required_string("secret_file"),
          fields.required_strings("tools"),
          fields.string("computer"),
          fields.integer("max_inflight"),
          fields.boolean("allow_insecure_transport").value_or(false)};
}

RawFile decode_file(const toml::table& root) {
  const Fields top{root, "", "the top level"};
  top.allow_only({"listen", "allow_insecure_bind", "max_inflight", "audit_args", "audit_path",
                  "control_socket", "metrics_listen", "allowed_origins", "trust_peer_headers", "vm",
                  "computer", "timeouts", "limits", "client", "pty_attach"});
  RawFile out;
  out.listen = top.string("listen");
  out.trust_peer_headers = top.boolean("trust_peer_headers");
  out.allow_insecure_bind = top.boolean("allow_insecure_bind").value_or(false);
  out.max_inflight = top.integer("max_inflight");
  out.audit_args = top.boolean("audit_args").value_or(true);
  out.audit_path = top.string("audit_path");
  out.control_socket = top.string("control_socket");
  out.metrics_listen = top.string("metrics_listen");
  out.allowed_origins = top.strings("allowed_origins");
  if (const toml::table* vm = top.subtable("vm", "[vm]")) {
    const Fields fields{*vm, "[vm]", "[vm]"};
    fields.allow_only({"secret_sha256"});
    out.vm_secret = fields.required_string("secret_sha256");
  }
  const auto computers = top.tables("computer");
  for (std::size_t i = 0; i < computers.size(); ++i) {
    out.computers.push_back(decode_computer(*computers[i], i));
  }
  if (const toml::table* timeouts = top.subtable("timeouts", "[timeouts]")) {
    out.timeouts = decode_timeouts(*timeouts);
  }
  if (const toml::table* limits = top.subtable("limits", "[limits]")) {
    out.limits = decode_limits(*limits);
  }
  const auto clients = top.tables("client");
  for (std::size_t i = 0; i < clients.size(); ++i) {
    out.clients.push_back(decode_client(*clients[i], i));
  }
  const auto attaches = top.tables("pty_attach");
  for (std::size_t i = 0; i < attaches.size(); ++i) {
    out.pods.push_back(decode_pod(*attaches[i], i));
  }
  return out;
}

toml::table parse_toml(std::string_view text) {
  try {
    return toml::parse(text);
  } catch (const toml::parse_error& error) {
    fail("", "TOML parse error at " + position_of(error.source()) + ": " +
                 std::string(error.description()));
  }
}

// ---------------------------------------------------------------------------------------
// Socket addresses and URLs

struct SocketAddress {
  std::string ip;  // without brackets
  std::uint16_t port = 0;
  bool v6 = false;
};

std::optional<std::uint16_t> parse_port(std::string_view text) {
  if (text.empty() || text.size() > 5) return std::nullopt;
  unsigned value = 0;
  for (const char c : text) {
    if (c < '0' || c > '9') return std::nullopt;
    value = value * 10 + static_cast<unsigned>(c - '0');
  }
  if (value > 65535) return std::nullopt;
  return static_cast<std::uint16_t>(value);
}

bool is_ipv4(const std::string& text, in_addr* out = nullptr) {
  in_addr scratch{};
  return inet_pton(AF_INET, text.c_str(), out ? out : &scratch) == 1;
}

bool is_ipv6(const std::string& text, in6_addr* out = nullptr) {
  in6_addr scratch{};
  return inet_pton(AF_INET6, text.c_str(), out ? out : &scratch) == 1;
}

// IPv4 "a.b.c.d:p" or IPv6 "[addr]:p"; never a hostname (resolving one at bind time would
// make the loopback rule depend on DNS).
std::optional<SocketAddress> parse_socket_address(std::string_view text) {
  SocketAddress out;
  std::string_view port;
  if (text.starts_with('[')) {
    const auto close = text.find("]:");
    if (close == std::string_view::npos) return std::nullopt;
    out.ip = std::string(text.substr(1, close - 1));
    out.v6 = true;
    port = text.substr(close + 2);
    if (!is_ipv6(out.ip)) return std::nullopt;
  } else {
    const auto colon = text.rfind(':');
    if (colon == std::string_view::npos) return std::nullopt;
    out.ip = std::string(text.substr(0, colon));
    port = text.substr(colon + 1);
    if (!is_ipv4(out.ip)) return std::nullopt;
  }
  const auto number = parse_port(port);
  if (!number) return std::nullopt;
  out.port = *number;
  return out;
}

// 127.0.0.0/8 or ::1. The unspecified addresses (0.0.0.0, ::) are not loopback.
bool is_loopback_ip(const std::string& ip) {
  in_addr v4{};
  if (is_ipv4(ip, &v4)) return (ntohl(v4.s_addr) >> 24) == 127;
  in6_addr v6{};
  return is_ipv6(ip, &v6) && IN6_IS_ADDR_LOOPBACK(&v6);
}

// ---------------------------------------------------------------------------------------
// Names, paths, ranges

bool only_chars(std::string_view text, std::string_view extra) {
  return std::all_of(text.begin(), text.end(), [extra](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || extra.find(c) != std::string_view::npos;
  });
}

// Client and pod names. They appear in audit lines and logs, so keep them plain.
void check_principal_name(std::string_view name, std::string_view owner) {
  if (!name.empty() && name.size() <= 64 && only_chars(name, "._-")) return;
  fail(owner, "name must be 1-64 chars of [A-Za-z0-9._-]");
}

// Computer names are also bare TOML keys in a client's `computers`, where a `.` would make
// a dotted key (a nested table), so they may not contain one.
void check_computer_name(std::string_view name, std::string_view owner) {
  if (!name.empty() && name.size() <= 64 && only_chars(name, "_-")) return;
  if (name.find('.') != std::string_view::npos) {
    std::string dashed(name);
    std::replace(dashed.begin(), dashed.end(), '.', '-');
    fail(owner, "a computer name may not contain `.`: as a bare TOML key " + in_quotes(name) +
                    " would be a dotted key that makes a nested table; use " + in_quotes(dashed) +
                    " instead");
  }
  fail(owner, "a computer name must be 1-64 chars of [A-Za-z0-9_-]");
}

int checked_max_inflight(std::int64_t value, std::string_view owner, std::string_view meaning) {
  if (value >= 1 && value <= kMaxInflightLimit) return static_cast<int>(value);
  fail(owner, "`max_inflight` must be 1..=64 (" + std::string(meaning) + "), got " +
                  std::to_string(value));
}

int checked_timeout(std::int64_t value, std::string_view owner, std::string_view key) {
  if (value >= 1 && value <= kTimeoutLimitSecs) return static_cast<int>(value);
  fail(owner, "`" + std::string(key) + "` must be 1..=600 seconds, got " + std::to_string(value));
}

// `context` is where the verifier sits, e.g. `[[computer]] "a": `secret_sha256``.
Verifier checked_verifier(std::string_view text, std::string_view context) {
  try {
    return parse_verifier(text);
  } catch (const std::invalid_argument& error) {
    fail(context, error.what());
  }
}

// ---------------------------------------------------------------------------------------
// Top-level settings

void apply_listen(const RawFile& raw, Config& config) {
  const std::string text = raw.listen.value_or("127.0.0.1:8790");
  const auto address = parse_socket_address(text);
  if (!address) {
    fail("",
         "`listen` must be ip:port, such as \"127.0.0.1:8790\" or \"[::1]:8790\" (a host "
         "name such as localhost:8790 is not accepted), got " +
             in_quotes(text));
  }
  config.listen_ip = address->ip;
  config.listen_port = address->port;
  config.allow_insecure_bind = raw.allow_insecure_bind;
  if (is_loopback_ip(address->ip) || raw.allow_insecure_bind) return;
  fail("", "listen = " + in_quotes(text) +
               " is not a loopback address: callers would send bearer tokens in clear to "
               "anything that can reach it. Keep listen on 127.0.0.1 and front it with "
               "`tailscale serve` or a tunnel, or set `allow_insecure_bind = true` to accept "
               "bearer tokens in clear on a private network");
}

// The metrics listener carries no secret, but it tells whoever reaches it which computers
// exist and who calls them: loopback too, unless the operator opened `listen` as well.
std::optional<ListenAddress> build_metrics_listen(const RawFile& raw) {
  if (!raw.metrics_listen) return std::nullopt;
  const auto address = parse_socket_address(*raw.metrics_listen);
  if (!address) {
    fail("",
         "`metrics_listen` must be ip:port, such as \"127.0.0.1:9790\" or \"[::1]:9790\", got " +
             in_quotes(*raw.metrics_listen));
  }
  if (!is_loopback_ip(address->ip) && !raw.allow_insecure_bind) {
    fail("", "metrics_listen = " + in_quotes(*raw.metrics_listen) +
                 " is not a loopback address: it would show every computer and caller name to "
                 "anything that can reach it. Keep it on 127.0.0.1 (scrape it from the same "
                 "machine or through a tunnel), or set `allow_insecure_bind = true`");
  }
  return ListenAddress{address->ip, address->port};
}

Timeouts build_timeouts(const RawTimeouts& raw) {
  Timeouts out;
  if (raw.default_secs)
    out.default_secs = checked_timeout(*raw.default_secs, "[timeouts]", "default_secs");
  if (raw.control_secs)
    out.control_secs = checked_timeout(*raw.control_secs, "[timeouts]", "control_secs");
  if (raw.max_total_secs) {
    if (*raw.max_total_secs < 1 || *raw.max_total_secs > kMaxTotalLimitSecs) {
      fail("[timeouts]", "`max_total_secs` must be 1..=86400 seconds, got " +
                             std::to_string(*raw.max_total_secs));
    }
    out.max_total_secs = static_cast<int>(*raw.max_total_secs);
  }
  if (raw.write_secs) out.write_secs = checked_timeout(*raw.write_secs, "[timeouts]", "write_secs");
  if (raw.idle_secs) out.idle_secs = checked_timeout(*raw.idle_secs, "[timeouts]", "idle_secs");
  for (const auto& [tool, secs] : raw.tools) {
    // User entries are added to the built-in screenshot entry, or override it.
    out.tools[tool] = checked_timeout(secs, "[timeouts.tools]", tool);
  }
  return out;
}

std::int64_t checked_limit(std::optional<std::int64_t> value, std::int64_t fallback,
                           std::string_view key, std::int64_t low, std::int64_t high) {
  if (!value) return fallback;
  if (*value >= low && *value <= high) return *value;
  fail("[limits]", "`" + std::string(key) + "` must be " + std::to_string(low) +
                       "..=" + std::to_string(high) + ", got " + std::to_string(*value));
}

// The bounds keep a typo from disabling a limit: a reply may be 16 MiB, so the reply
// budget holds at least one; a request over 64 MiB is no tool call.
Limits build_limits(const RawLimits& raw) {
  const Limits defaults;
  Limits out;
  out.max_connections = static_cast<int>(
      checked_limit(raw.max_connections, defaults.max_connections, "max_connections", 8, 1 << 20));
  out.max_request_bytes = static_cast<std::uint64_t>(
      checked_limit(raw.max_request_bytes, static_cast<std::int64_t>(defaults.max_request_bytes),
                    "max_request_bytes", 1024, 64 << 20));
  out.max_reply_buffer_bytes = static_cast<std::uint64_t>(checked_limit(
                                   raw.max_reply_buffer_mib,
                                   static_cast<std::int64_t>(defaults.max_reply_buffer_bytes >> 20),
                                   "max_reply_buffer_mib", 16, 1 << 20))
                               << 20;
  return out;
}

// An origin as a browser sends it: scheme, host and an optional port, nothing more, so
// that the exact comparison a request gets cannot be fooled by a path or a trailing slash.
std::vector<std::string> build_allowed_origins(const RawFile& raw) {
  if (!raw.allowed_origins) return {};
  for (const std::string& origin : *raw.allowed_origins) {
    const bool http = origin.starts_with("http://");
    const bool https = origin.starts_with("https://");
    const std::string_view authority = std::string_view(origin).substr(http    ? 7
                                                                       : https ? 8
                                                                               : origin.size());
    if ((!http && !https) || authority.empty() ||
        authority.find_first_of("/?#@ \t") != std::string_view::npos) {
      fail("",
           "`allowed_origins` entries must be origins such as \"https://app.example\" or "
           "\"http://app.example:8080\" (scheme, host, optional port; no path), got " +
               in_quotes(origin));
    }
  }
  return *raw.allowed_origins;
}

// Notifications that name no call may go to a caller only when exactly one client (a
// [[client]] or a [[pty_attach]]) can reach the computer at all.
void mark_sole_clients(Config& config) {
  for (Computer& computer : config.computers) {
    const auto clients = std::count_if(
        config.clients.begin(), config.clients.end(),
        [&](const Client& client) { return client.grant.tools_for(computer.name) != nullptr; });
    const auto attaches =
        std::count_if(config.pods.begin(), config.pods.end(),
                      [&](const Pod& attach) { return attach.computer == computer.name; });
    computer.sole_client = clients + attaches == 1;
  }
}

// Our own key: where `serve` answers `switchboard workers`.
std::optional<std::filesystem::path> build_control_socket(const RawFile& raw,
                                                          std::string_view home) {
  if (!raw.control_socket) return std::nullopt;
  if (raw.control_socket->empty()) {
    fail("",
         "`control_socket` is empty: give a path such as \"~/.local/state/switchboard.sock\", "
         "or remove the key to use /tmp/switchboard-<port>.sock");
  }
  auto path = expand_home(*raw.control_socket, home);
  constexpr std::size_t kLimit = sizeof(sockaddr_un{}.sun_path) - 1;
  if (path.native().size() > kLimit) {
    fail("", "`control_socket` " + in_quotes(path.native()) + " is longer than " +
                 std::to_string(kLimit) +
                 " bytes, the limit for a Unix socket path; choose a shorter path");
  }
  return path;
}

// ---------------------------------------------------------------------------------------
// Computers

void build_computers(const RawFile& raw, Config& config) {
  if (raw.vm_secret && !raw.computers.empty()) {
    fail("",
         "[vm] and [[computer]] may not both be in one file: [vm] is the v1 form of a single "
         "computer named \"default\"; write every "
         "computer as a [[computer]] block (for the old one: name = \"default\" and its "
         "secret_sha256) and remove [vm]");
  }
  if (raw.vm_secret) {
    config.v1_form = true;
    config.computers.push_back({std::string(kV1ComputerName),
                                checked_verifier(*raw.vm_secret, "[vm].secret_sha256"),
                                config.max_inflight});
  }
  for (const RawComputer& block : raw.computers) {
    const std::string owner = block_owner("[[computer]]", block.name);
    check_computer_name(block.name, owner);
    if (config.find_computer(block.name)) {
      fail(owner, "duplicate name: another [[computer]] is already called " +
                      in_quotes(block.name) + "; give each computer its own name");
    }
    Computer computer{block.name, checked_verifier(block.secret, owner + ": `secret_sha256`"),
                      config.max_inflight};
    for (const Computer& earlier : config.computers) {
      if (earlier.secret != computer.secret) continue;
      fail(owner, "`secret_sha256` is already another computer's ([[computer]] " +
                      in_quotes(earlier.name) +
                      "): the secret alone selects the slot, so one verifier is one computer; "
                      "make this computer its own pair with `switchboard gen-secret`");
    }
    if (block.max_inflight) {
      computer.max_inflight =
          checked_max_inflight(*block.max_inflight, owner, "this computer's in-flight cap");
    }
    config.computers.push_back(std::move(computer));
  }
  if (config.computers.empty()) {
    fail("",
         "nothing to relay to: the file configures no computer; add a [[computer]] block "
         "with name and secret_sha256 (or, in the v1 form, a [vm] block)");
  }
}

std::vector<std::string> computer_names(const Config& config) {
  std::vector<std::string> names;
  for (const Computer& computer : config.computers) names.push_back(in_quotes(computer.name));
  return names;
}

// ---------------------------------------------------------------------------------------
// Tool lists and grants

ToolList build_tool_list(const std::vector<std::string>& items, std::string_view owner) {
  if (items.empty()) {
    fail(owner,
         "`tools` is empty: list the tool names this caller may use, or write [\"*\"] "
         "for every tool");
  }
  const bool has_wildcard = std::find(items.begin(), items.end(), kWildcard) != items.end();
  if (has_wildcard && items.size() > 1) {
    fail(owner,
         "`tools` mixes \"*\" with names: [\"*\"] already allows every tool; keep either "
         "[\"*\"] or the names");
  }
  ToolList out;
  if (has_wildcard) {
    out.all = true;
    return out;
  }
  for (const std::string& item : items) {
    const auto first = item.find_first_not_of(" \t\r\n\f\v");
    const auto last = item.find_last_not_of(" \t\r\n\f\v");
    out.names.insert(first == std::string::npos ? std::string()
                                                : item.substr(first, last - first + 1));
  }
  return out;
}

Grant build_computer_grant(const RawComputerTable& table, std::string_view owner) {
  if (table.empty()) {
    fail(owner,
         "`computers` is empty: name a computer and its tools, e.g. computers = { "
         "macmini = [\"sys_info\"] }, or write computers = { \"*\" = [\"*\"] } for every "
         "computer and tool");
  }
  Grant grant;
  if (table.contains(kWildcard)) {
    if (table.size() > 1) {
      fail(owner,
           "`computers` mixes \"*\" with computer names: \"*\" already reaches every "
           "computer; keep either { \"*\" = [...] } or the named entries");
    }
    grant.wildcard = true;
    grant.wildcard_tools =
        build_tool_list(table.begin()->second, std::string(owner) + " `computers.\"*\"`");
    return grant;
  }
  for (const auto& [computer, tools] : table) {
    const std::string entry_owner = std::string(owner) + " `computers." + computer + "`";
    check_computer_name(computer, entry_owner);
    grant.named.emplace(computer, build_tool_list(tools, entry_owner));
  }
  return grant;
}

// A named grant may only name computers that exist: otherwise a typo grants nothing today
// and pre-grants a computer configured under that name later.
void check_granted_computers_exist(const Grant& grant, const Config& config,
                                   std::string_view owner) {
  for (const auto& [computer, tools] : grant.named) {
    if (config.find_computer(computer)) continue;
    fail(owner, "`computers` names " + in_quotes(computer) +
                    ", which is not a configured [[computer]]: a computer given that name later "
                    "would inherit this grant; fix the name or add the [[computer]] block "
                    "(configured: " +
                    join(computer_names(config), ", ") + ")");
  }
}

// What bare POST /mcp means for this caller; it must never change when a computer is added.
std::string resolve_default_computer(const std::optional<std::string>& given, const Grant& grant,
                                     const Config& config, std::string_view owner) {
  if (given) {
    if (!config.find_computer(*given)) {
      fail(owner,
           "default_computer = " + in_quotes(*given) +
               " is not a configured computer; name one of: " + join(computer_names(config), ", "));
    }
    if (!grant.tools_for(*given)) {
      fail(owner, "default_computer = " + in_quotes(*given) +
                      " is not in this caller's `computers`: POST /mcp would resolve to a "
                      "computer it may not use; add it to `computers` or pick one it lists");
    }
    return *given;
  }
  if (grant.wildcard) {
    fail(owner,
         "`default_computer` is required: computers = { \"*\" = [...] } reaches every "
         "computer, including ones added later, so the meaning of POST /mcp must be "
         "pinned; add default_computer = " +
             in_quotes(config.computers.front().name) + " (or another computer)");
  }
  if (grant.named.size() == 1) return grant.named.begin()->first;
  std::vector<std::string> reachable;
  for (const auto& [computer, tools] : grant.named) reachable.push_back(in_quotes(computer));
  fail(owner, "`default_computer` is required: this caller can reach " +
                  std::to_string(reachable.size()) + " computers (" + join(reachable, ", ") +
                  "), so POST /mcp must name one; add default_computer = " + reachable.front());
}

// ---------------------------------------------------------------------------------------
// Clients

// `tools` (v1) or `computers` (v2): exactly one of them, and `tools` only beside [vm].
Grant build_client_grant(const RawClient& block, const Config& config, std::string_view owner) {
  if (block.tools && block.computers) {
    fail(owner,
         "`tools` and `computers` are both set: `tools` is the v1 form (one computer); "
         "keep `computers` only");
  }
  if (block.tools) {
    if (!config.v1_form) {
      std::vector<std::string> tools;
      for (const auto& tool : *block.tools) tools.push_back(in_quotes(tool));
      fail(owner,
           "`tools` is the v1 form and names no computer, but this file has [[computer]] "
           "blocks; write computers = { <name> = [...] } instead, e.g. computers = { " +
               config.computers.front().name + " = [" + join(tools, ", ") + "] }");
    }
    Grant grant;
    grant.named.emplace(std::string(kV1ComputerName), build_tool_list(*block.tools, owner));
    return grant;
  }
  if (!block.computers) {
    fail(owner, "no `computers`: name at least one computer and its tools, e.g. computers = { " +
                    config.computers.front().name +
                    " = [\"sys_info\"] }, or use computers = { \"*\" = [\"*\"] } for every "
                    "computer and tool");
  }
  return build_computer_grant(*block.computers, owner);
}

void check_token_unique(const Verifier& token, const Config& config, std::string_view owner) {
  for (const Computer& computer : config.computers) {
    if (computer.secret != token) continue;
    fail(owner, "`token_sha256` is the verifier of [[computer]] " + in_quotes(computer.name) +
                    "'s secret; a client token and a computer secret must differ: make a new "
                    "token with `switchboard gen-secret`");
  }
  for (const Client& earlier : config.clients) {
    if (earlier.token != token) continue;
    fail(owner, "`token_sha256` is shared with another client ([[client]] " +
                    in_quotes(earlier.name) +
                    "): each client needs its own token; make one with `switchboard gen-secret`");
  }
}

void build_clients(const RawFile& raw, Config& config) {
  for (const RawClient& block : raw.clients) {
    const std::string owner = block_owner("[[client]]", block.name);
    check_principal_name(block.name, owner);
    const bool taken = std::any_of(config.clients.begin(), config.clients.end(),
                                   [&](const Client& c) { return c.name == block.name; });
    if (taken) {
      fail(owner, "duplicate name: another [[client]] is already called " + in_quotes(block.name) +
                      "; give each client its own name");
    }
    Client client{
        block.name, checked_verifier(block.token, owner + ": `token_sha256`"), {}, {}, {}};
    check_token_unique(client.token, config, owner);
    client.grant = build_client_grant(block, config, owner);
    check_granted_computers_exist(client.grant, config, owner);
    client.default_computer =
        resolve_default_computer(block.default_computer, client.grant, config, owner);
    if (block.max_inflight) {
      client.max_inflight =
          checked_max_inflight(*block.max_inflight, owner, "this caller's share of one computer");
    }
    config.clients.push_back(std::move(client));
  }
}

// ---------------------------------------------------------------------------------------
// PTY attaches

// The URL is parsed here once, and what this checks is what the dialer dials.
DialTarget checked_pod_target(const RawPod& block, const Config& config,
                              std::string_view owner) {
  auto parsed = parse_dial_target(block.url);
  if (auto* problem = std::get_if<std::string>(&parsed)) {
    fail(owner, "`url` " + *problem + "; write it as wss://<host>/tools/attach/<session>");
  }
  DialTarget target = std::move(std::get<DialTarget>(parsed));
  if (!target.tls && !target.loopback && !block.allow_insecure_transport) {
    fail(owner, "`url` = " + in_quotes(block.url) +
                    ": ws:// to a non-loopback host sends the attach secret in clear; use "
                    "wss://, or set allow_insecure_transport = true (acceptable over a "
                    "tailnet IP)");
  }
  for (const Pod& earlier : config.pods) {
    if (earlier.target != target) continue;
    fail(owner, "`url` " + in_quotes(block.url) + " is already dialled by [[pty_attach]] " +
                    in_quotes(earlier.name) +
                    ": two dialers on one session evict each other; give each attach its own "
                    "session URL");
  }
  return target;
}

std::string resolve_pod_computer(const RawPod& block, const Config& config,
                                 std::string_view owner) {
  if (block.computer) {
    if (config.find_computer(*block.computer)) return *block.computer;
    fail(owner,
         "computer = " + in_quotes(*block.computer) +
             " is not a configured computer; name one of: " + join(computer_names(config), ", "));
  }
  if (config.computers.size() == 1) return config.computers.front().name;
  fail(owner, "`computer` is required: " + std::to_string(config.computers.size()) +
                  " computers are configured (" + join(computer_names(config), ", ") +
                  "); add computer = " + in_quotes(config.computers.front().name) +
                  " (or another) to say which one this attach lends");
}

void build_pods(const RawFile& raw, Config& config, std::string_view home) {
  for (const RawPod& block : raw.pods) {
    const std::string owner = block_owner("[[pty_attach]]", block.name);
    check_principal_name(block.name, owner);
    const auto same_name = [&](const auto& other) { return other.name == block.name; };
    if (std::any_of(config.clients.begin(), config.clients.end(), same_name) ||
        std::any_of(config.pods.begin(), config.pods.end(), same_name)) {
      fail(owner, "name " + in_quotes(block.name) +
                      " is already used by a client or attach; clients and pty attaches share "
                      "one namespace, give this attach its own name");
    }
    Pod attach;
    attach.target = checked_pod_target(block, config, owner);
    attach.name = block.name;
    attach.url = block.url;
    attach.computer = resolve_pod_computer(block, config, owner);
    attach.tools = build_tool_list(block.tools, owner);
    if (block.max_inflight) {
      attach.max_inflight =
          checked_max_inflight(*block.max_inflight, owner, "this attach's share of its computer");
    }
    // Not read here: the dialer re-reads it on every dial, and `check` warns about it.
    attach.secret_file = expand_home(block.secret_file, home);
    attach.allow_insecure_transport = block.allow_insecure_transport;
    config.pods.push_back(std::move(attach));
  }
  if (config.clients.empty() && config.pods.empty()) {
    fail("",
         "nothing could ever call a computer: add a [[client]] (name, token_sha256, "
         "computers) or a [[pty_attach]]");
  }
}

// ---------------------------------------------------------------------------------------
// Files

struct FileRead {
  std::string content;
  int error = 0;  // errno when the file could not be read
};

FileRead read_whole_file(const std::filesystem::path& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return {{}, errno};
  FileRead out;
  char buffer[8192];
  for (;;) {
    const ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n > 0) {
      out.content.append(buffer, static_cast<std::size_t>(n));
    } else if (n == 0) {
      break;
    } else if (errno != EINTR) {
      out.error = errno;
      break;
    }
  }
  ::close(fd);
  return out;
}

// The principals that may use computers, as grants: clients and pods alike. An
// attach's grant is named, so it only ever counts as naming its own computer.
bool grant_names(const Grant& grant, std::string_view computer) {
  return grant.named.contains(computer);
}

}  // namespace

// -----------------------------------------------------------------------------------------
// The model's helpers

const ToolList* Grant::tools_for(std::string_view computer) const {
  if (wildcard) return &wildcard_tools;
  const auto found = named.find(computer);
  return found == named.end() ? nullptr : &found->second;
}

int Timeouts::for_tool(std::string_view tool) const {
  const auto found = tools.find(tool);
  return found == tools.end() ? default_secs : found->second;
}

std::string ListenAddress::display() const {
  if (ip.find(':') == std::string::npos) return ip + ":" + std::to_string(port);
  // Printed in the canonical form ("[::1]"), whatever spelling the file used.
  in6_addr address{};
  char text[INET6_ADDRSTRLEN] = {};
  const bool ok = inet_pton(AF_INET6, ip.c_str(), &address) == 1 &&
                  inet_ntop(AF_INET6, &address, text, sizeof text) != nullptr;
  return "[" + (ok ? std::string(text) : ip) + "]:" + std::to_string(port);
}

bool ListenAddress::loopback() const {
  return is_loopback_ip(ip);
}

std::string Config::listen_display() const {
  return ListenAddress{listen_ip, listen_port}.display();
}

std::filesystem::path Config::control_socket_path() const {
  if (control_socket) return *control_socket;
  return "/tmp/switchboard-" + std::to_string(listen_port) + ".sock";
}

const Computer* Config::find_computer(std::string_view name) const {
  for (const Computer& computer : computers) {
    if (computer.name == name) return &computer;
  }
  return nullptr;
}

std::vector<std::string> Config::wildcard_clients() const {
  std::vector<std::string> names;
  for (const Client& client : clients) {
    if (client.grant.wildcard) names.push_back(client.name);
  }
  return names;
}

std::vector<std::string> Config::unused_computers() const {
  // Attaches never hold a wildcard grant, so only clients can make every computer used.
  if (!wildcard_clients().empty()) return {};
  std::vector<std::string> unused;
  for (const Computer& computer : computers) {
    const bool by_client = std::any_of(clients.begin(), clients.end(), [&](const Client& c) {
      return grant_names(c.grant, computer.name);
    });
    const bool by_attach =
        std::any_of(pods.begin(), pods.end(),
                    [&](const Pod& a) { return a.computer == computer.name; });
    if (!by_client && !by_attach) unused.push_back(computer.name);
  }
  return unused;
}

// -----------------------------------------------------------------------------------------
// Loading

Config parse_config(std::string_view toml_text, std::string_view home) {
  const RawFile raw = decode_file(parse_toml(toml_text));
  Config config;
  apply_listen(raw, config);
  if (raw.max_inflight) {
    config.max_inflight =
        checked_max_inflight(*raw.max_inflight, "", "the default cap of each computer");
  }
  config.timeouts = build_timeouts(raw.timeouts);
  config.limits = build_limits(raw.limits);
  config.trust_peer_headers = raw.trust_peer_headers.value_or(true);
  config.control_socket = build_control_socket(raw, home);
  config.metrics_listen = build_metrics_listen(raw);
  config.audit_args = raw.audit_args;
  if (raw.audit_path) config.audit_path = expand_home(*raw.audit_path, home);
  build_computers(raw, config);
  build_clients(raw, config);
  build_pods(raw, config, home);
  config.allowed_origins = build_allowed_origins(raw);
  mark_sole_clients(config);
  return config;
}

Config load_config_file(const std::filesystem::path& path, std::string_view home) {
  const FileRead file = read_whole_file(path);
  if (file.error != 0) {
    throw ConfigError("reading " + path.string() + ": " + std::strerror(file.error));
  }
  try {
    return parse_config(file.content, home);
  } catch (const ConfigError& error) {
    throw ConfigError("in " + path.string() + ": " + error.what());
  }
}

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
