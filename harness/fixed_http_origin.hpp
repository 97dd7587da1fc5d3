// An HTTP origin on loopback that answers every request with the same JSON document and
// status, on a thread of its own: an issuer's key set (JWKS) for tests and benchmarks that
// have no real authorization server, or a collector that takes (or refuses) spans. It
// counts the requests it answered and keeps the last one.
#pragma once

#include <atomic>
#include <mutex>
#include <string>
#include <thread>

namespace harness {

class FixedHttpOrigin {
 public:
  explicit FixedHttpOrigin(std::string json_body, int status = 200);
  ~FixedHttpOrigin();
  FixedHttpOrigin(const FixedHttpOrigin&) = delete;
  FixedHttpOrigin& operator=(const FixedHttpOrigin&) = delete;

  int port() const { return port_; }
  std::string url(const std::string& path) const;
  int answered() const { return answered_.load(); }
  // The last request answered, head and body as received.
  std::string last_request() const;

 private:
  void serve();
  void answer(int connection);

  std::string response_;
  int listener_ = -1;
  int port_ = 0;
  std::atomic<bool> stopping_{false};
  std::atomic<int> answered_{0};
  mutable std::mutex last_mutex_;
  std::string last_request_;
  std::thread thread_;
};

}  // namespace harness
