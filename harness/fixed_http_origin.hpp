// An HTTP origin on loopback that answers every request with the same JSON document, on a
// thread of its own: an issuer's key set (JWKS) for tests and benchmarks that have no real
// authorization server. It counts the requests it answered.
#pragma once

#include <atomic>
#include <string>
#include <thread>

namespace harness {

class FixedHttpOrigin {
 public:
  explicit FixedHttpOrigin(std::string json_body);
  ~FixedHttpOrigin();
  FixedHttpOrigin(const FixedHttpOrigin&) = delete;
  FixedHttpOrigin& operator=(const FixedHttpOrigin&) = delete;

  int port() const { return port_; }
  std::string url(const std::string& path) const;
  int answered() const { return answered_.load(); }

 private:
  void serve();
  void answer(int connection);

  std::string response_;
  int listener_ = -1;
  int port_ = 0;
  std::atomic<bool> stopping_{false};
  std::atomic<int> answered_{0};
  std::thread thread_;
};

}  // namespace harness
