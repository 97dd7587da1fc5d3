#include "bench/nginx_peer.hpp"

#include <unistd.h>

#include <chrono>
#include <fstream>
#include <stdexcept>

#include "harness/http_client.hpp"
#include "harness/wait.hpp"

namespace sbbench {

namespace {

// One nginx process serving `server` (a server block): no master, no daemon, one worker's
// worth of connections, keep-alive both ways, no logging, every temporary file in `dir`
// (the Debian defaults need root).
std::string nginx_config(const std::filesystem::path& dir, const std::string& server) {
  const auto in_dir = [&](const char* name) { return (dir / name).string(); };
  std::string config = "daemon off;\nmaster_process off;\nworker_processes 1;\n";
  config += "pid " + in_dir("nginx.pid") + ";\n";
  config += "error_log " + in_dir("error.log") + " warn;\n";
  config += "events { worker_connections 1024; }\n";
  config += "http {\n  access_log off;\n  keepalive_requests 1000000;\n";
  for (const char* kind : {"client_body", "proxy", "fastcgi", "uwsgi", "scgi"})
    config += "  " + std::string(kind) + "_temp_path " + in_dir(kind) + ";\n";
  return config + server + "}\n";
}

std::string origin_server(int port, const std::string& reply) {
  return "  server {\n    listen 127.0.0.1:" + std::to_string(port) +
         ";\n"
         "    location / { default_type application/json; return 200 '" +
         reply + "'; }\n  }\n";
}

std::string proxy_server(int port, int origin_port) {
  return "  upstream origin {\n    server 127.0.0.1:" + std::to_string(origin_port) +
         ";\n    keepalive 64;\n    keepalive_requests 1000000;\n  }\n"
         "  server {\n    listen 127.0.0.1:" +
         std::to_string(port) +
         ";\n"
         "    location / {\n      proxy_pass http://origin;\n      proxy_http_version 1.1;\n"
         "      proxy_set_header Connection \"\";\n    }\n  }\n";
}

// Starts nginx on `config_text` in `dir` (created); its pid.
pid_t start_nginx(const std::filesystem::path& program, const std::filesystem::path& dir,
                  const std::string& config_text) {
  std::filesystem::create_directories(dir);
  const auto config = dir / "nginx.conf";
  std::ofstream(config) << config_text;
  return harness::start_process({program.string(), "-p", dir.string(), "-c", config.string(), "-e",
                                 (dir / "error.log").string()},
                                std::nullopt, dir / "stderr.log");
}

std::string logs_of(const std::filesystem::path& dir) {
  return harness::read_file(dir / "stderr.log") + harness::read_file(dir / "error.log");
}

}  // namespace

std::optional<std::filesystem::path> NginxPeer::find() {
  for (const char* where : {"/usr/sbin/nginx", "/usr/local/sbin/nginx", "/usr/bin/nginx"}) {
    if (::access(where, X_OK) == 0) return std::filesystem::path(where);
  }
  return std::nullopt;
}

NginxPeer::NginxPeer(const std::filesystem::path& program, const std::string& reply) {
  // Inside '…' nginx reads \ as an escape and $ as a variable; a JSON reply of the bench
  // has neither, and one that had would be measured wrongly, so it is refused.
  if (reply.find_first_of("'\\$") != std::string::npos)
    throw std::runtime_error("the reply cannot be put in an nginx config as it is");
  origin_pid_ = start_nginx(
      program, dir_.path() / "origin",
      nginx_config(dir_.path() / "origin", origin_server(direct_port_, reply) +
                                               proxy_server(inner_proxy_port_, direct_port_)));
  proxy_pid_ =
      start_nginx(program, dir_.path() / "proxy",
                  nginx_config(dir_.path() / "proxy", proxy_server(proxy_port_, direct_port_)));
  const bool answering = harness::eventually(
      [&] {
        try {
          return harness::http_get(direct_port_, "/").status == 200 &&
                 harness::http_get(proxy_port_, "/").status == 200 &&
                 harness::http_get(inner_proxy_port_, "/").status == 200;
        } catch (const std::exception&) {
          return false;
        }
      },
      std::chrono::seconds(10));
  if (!answering) {
    const std::string logs = logs_of(dir_.path() / "origin") + logs_of(dir_.path() / "proxy");
    stop();
    throw std::runtime_error("nginx did not start: " + logs);
  }
}

void NginxPeer::stop() {
  for (pid_t* pid : {&proxy_pid_, &origin_pid_}) {
    if (*pid > 0) harness::stop_process(*pid, std::chrono::seconds(2));
    *pid = -1;
  }
}

NginxPeer::~NginxPeer() {
  stop();
}

}  // namespace sbbench
