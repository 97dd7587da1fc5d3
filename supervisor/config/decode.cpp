#include "supervisor/config/raw.hpp"

#include <toml++/toml.h>

#include <algorithm>
#include <initializer_list>
#include <utility>

#include "supervisor/config/messages.hpp"

namespace sb::config {
namespace {

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

  std::optional<double> number(std::string_view key) const {
    const toml::node* node = find(key);
    if (!node) return std::nullopt;
    if (node->is_integer()) return static_cast<double>(node->as_integer()->get());
    if (!node->is_floating_point()) wrong_type(key, *node, "a number");
    return node->as_floating_point()->get();
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

RawTimeouts decode_timeouts(const toml::table& table) {
  const Fields fields{table, "[timeouts]", "[timeouts]"};
  fields.allow_only({"default_secs", "control_secs", "max_total_secs", "write_secs", "idle_secs",
                     "drain_secs", "resume_secs", "poll_secs", "tools"});
  RawTimeouts out{fields.integer("default_secs"),
                  fields.integer("control_secs"),
                  fields.integer("max_total_secs"),
                  fields.integer("write_secs"),
                  fields.integer("idle_secs"),
                  fields.integer("drain_secs"),
                  fields.integer("resume_secs"),
                  fields.integer("poll_secs"),
                  {}};
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
  fields.allow_only({"max_connections", "max_request_bytes", "max_reply_buffer_mib",
                     "max_worker_buffer_mib", "audit_unrelayed_per_minute", "max_subscriptions",
                     "replay_events", "max_streams_per_caller"});
  return {fields.integer("max_connections"),
          fields.integer("max_request_bytes"),
          fields.integer("max_reply_buffer_mib"),
          fields.integer("max_worker_buffer_mib"),
          fields.integer("audit_unrelayed_per_minute"),
          fields.integer("max_subscriptions"),
          fields.integer("replay_events"),
          fields.integer("max_streams_per_caller")};
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
      out += '.';
      out += key.str();
      next = value.as_table();
      break;  // follow the first branch only: it is a hint, not a full rendering
    }
    table = next;
  }
  return out;
}

// A client's `computers`, `resources` or `prompts`: free-form keys (computer names), each an
// array of strings (tool names, URI patterns, prompt names).
RawComputerTable decode_computer_table(const Fields& client, std::string_view table_key,
                                       const toml::node& node) {
  if (!node.is_table()) {
    client.wrong_type(table_key, node, "a table such as { macmini = [\"sys_info\"] }");
  }
  RawComputerTable out;
  for (auto&& [key, value] : *node.as_table()) {
    const std::string entry = std::string(table_key) + "." + std::string(key.str());
    if (value.is_table()) {
      // The usual cause is a bare key with a dot (rpi1.local), which TOML reads as a
      // nested table; say so rather than only "wrong type".
      const std::string dotted = dotted_key(key.str(), *value.as_table());
      std::string dashed = dotted;
      std::replace(dashed.begin(), dashed.end(), '.', '-');
      fail(client.owner, "`" + entry + "` is a table, not a list (" + position_of(value.source()) +
                             "): the bare key " + dotted +
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
  fields.allow_only({"name", "token_sha256", "oauth_identity", "oauth_issuer", "tools", "computers",
                     "resources", "prompts", "default_computer", "max_inflight"});
  RawClient out{.name = fields.required_string("name"),
                .token = fields.string("token_sha256"),
                .oauth_identity = fields.string("oauth_identity"),
                .oauth_issuer = fields.string("oauth_issuer"),
                .tools = fields.strings("tools"),
                .default_computer = fields.string("default_computer"),
                .max_inflight = fields.integer("max_inflight")};
  for (auto [key, table] :
       {std::pair{"computers", &out.computers}, std::pair{"resources", &out.resources},
        std::pair{"prompts", &out.prompts}}) {
    if (const toml::node* node = fields.find(key))
      *table = decode_computer_table(fields, key, *node);
  }
  return out;
}

RawPod decode_pod(const toml::table& table, std::size_t index) {
  const Fields fields{table, decoding_owner("[[pty_attach]]", table, index), "a [[pty_attach]]"};
  fields.allow_only({"name", "url", "secret_file", "tools", "computer", "max_inflight",
                     "allow_insecure_transport", "proxy", "proxy_credentials_file"});
  return {fields.required_string("name"),
          fields.required_string("url"),
          fields.required_string("secret_file"),
          fields.required_strings("tools"),
          fields.string("computer"),
          fields.integer("max_inflight"),
          fields.boolean("allow_insecure_transport").value_or(false),
          fields.string("proxy"),
          fields.string("proxy_credentials_file")};
}

RawOAuth decode_oauth(const toml::table& table) {
  const Fields fields{table, "[oauth]", "[oauth]"};
  fields.allow_only({"resource", "scopes", "issuer"});
  RawOAuth out{.resource = fields.required_string("resource"), .scopes = fields.strings("scopes")};
  const auto issuers = fields.tables("issuer");
  for (std::size_t i = 0; i < issuers.size(); ++i) {
    const Fields issuer{*issuers[i], decoding_owner("[[oauth.issuer]]", *issuers[i], i),
                        "an [[oauth.issuer]]"};
    issuer.allow_only({"issuer", "jwks_url", "algorithms", "clock_skew_secs", "identity_claim",
                       "introspection_url", "introspection_credentials_file"});
    out.issuers.push_back(RawIssuer{
        .issuer = issuer.required_string("issuer"),
        .jwks_url = issuer.string("jwks_url"),
        .algorithms = issuer.strings("algorithms"),
        .clock_skew_secs = issuer.integer("clock_skew_secs"),
        .identity_claim = issuer.string("identity_claim"),
        .introspection_url = issuer.string("introspection_url"),
        .introspection_credentials_file = issuer.string("introspection_credentials_file")});
  }
  return out;
}

RawTelemetry decode_telemetry(const toml::table& table) {
  const Fields fields{table, "[telemetry]", "[telemetry]"};
  fields.allow_only({"endpoint", "headers_file", "sample_ratio", "max_sampled_per_sec",
                     "batch_delay_ms", "max_queue_spans", "audit_logs"});
  return {.endpoint = fields.required_string("endpoint"),
          .headers_file = fields.string("headers_file"),
          .sample_ratio = fields.number("sample_ratio"),
          .max_sampled_per_sec = fields.integer("max_sampled_per_sec"),
          .batch_delay_ms = fields.integer("batch_delay_ms"),
          .max_queue_spans = fields.integer("max_queue_spans"),
          .audit_logs = fields.boolean("audit_logs")};
}

RawFile decode_file(const toml::table& root) {
  const Fields top{root, "", "the top level"};
  top.allow_only({"listen", "allow_insecure_bind", "max_inflight", "audit_args", "audit_path",
                  "control_socket", "metrics_listen", "allowed_origins", "trust_peer_headers", "vm",
                  "computer", "timeouts", "limits", "client", "pty_attach", "pty_attach_proxy",
                  "oauth", "telemetry"});
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
  out.pty_attach_proxy = top.string("pty_attach_proxy");
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
  if (const toml::table* oauth = top.subtable("oauth", "[oauth]")) out.oauth = decode_oauth(*oauth);
  if (const toml::table* telemetry = top.subtable("telemetry", "[telemetry]"))
    out.telemetry = decode_telemetry(*telemetry);
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

}  // namespace

RawFile decode_toml(std::string_view toml_text) {
  return decode_file(parse_toml(toml_text));
}

}  // namespace sb::config
