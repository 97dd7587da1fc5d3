// A fake openab-pty pod for the [[pty_attach]] end-to-end tests: a WebSocket server on
// 127.0.0.1 (port 0, plain or TLS) that accepts the switchboard's dial at
// /tools/attach/<session> when it carries "Authorization: Bearer <secret>", records every
// dial, and then plays the MCP client: it sends requests and collects what the switchboard
// answers. Its own thread runs the I/O; every wait is bounded.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace harness {

struct PodTls {
  std::filesystem::path certificate_chain;  // PEM: the pod's certificate (then its issuers)
  std::filesystem::path private_key;        // PEM
};

struct FakePodOptions {
  std::string secret;         // the grant the dialer must present
  std::optional<PodTls> tls;  // serve wss:// with this certificate
  // Upgrade, then never read: no pongs and no liveness, like a pod that hung.
  bool silent = false;
};

// One upgrade request as the pod saw it.
struct PodDial {
  std::string target;
  std::optional<std::string> authorization;
  std::vector<std::pair<std::string, std::string>> headers;
  int status = 0;  // the pod's answer: 101 when it upgraded
  std::chrono::steady_clock::time_point at;
  bool has_header(const std::string& name) const;
};

class FakePod {
 public:
  explicit FakePod(FakePodOptions options);
  ~FakePod();
  FakePod(const FakePod&) = delete;
  FakePod& operator=(const FakePod&) = delete;

  int port() const;
  // ws://127.0.0.1:<port>/tools/attach/<session> (wss:// with TLS); `host` replaces 127.0.0.1.
  std::string url(const std::string& session, const std::string& host = "127.0.0.1") const;

  // The next `count` upgrades are answered with `status` (e.g. 401, 502) instead of 101.
  void refuse_next(int status, int count = 1);

  std::vector<PodDial> dials() const;  // every upgrade request, in order
  std::size_t dial_count() const;
  std::size_t tls_failures() const;  // TLS handshakes that failed before any request
  std::size_t sessions() const;      // upgrades accepted
  bool wait_dials(std::size_t count, std::chrono::milliseconds timeout) const;
  bool wait_sessions(std::size_t count, std::chrono::milliseconds timeout) const;
  bool wait_tls_failures(std::size_t count, std::chrono::milliseconds timeout) const;

  // ---- the newest session ----
  void send(const nlohmann::json& message);  // one text frame
  void send_text(std::string text, bool binary = false);
  // Every message received on the newest session (JSON, or a string when not JSON).
  std::vector<nlohmann::json> messages() const;
  // The first message on the newest session whose "id" equals `id`.
  std::optional<nlohmann::json> wait_reply(const nlohmann::json& id,
                                           std::chrono::milliseconds timeout) const;
  // Sends `message` and waits for the reply with its id; null when none came in time.
  nlohmann::json request(const nlohmann::json& message,
                         std::chrono::milliseconds timeout = std::chrono::seconds(10));
  void close(std::uint16_t code);      // a close frame with `code`
  void drop();                         // the TCP connection, without a close frame
  std::size_t pings_received() const;  // WebSocket pings from the dialer
  bool session_ended() const;
  bool wait_session_ended(std::chrono::milliseconds timeout) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace harness
