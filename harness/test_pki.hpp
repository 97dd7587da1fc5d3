// A throwaway certificate authority for the wss:// tests, made with the OpenSSL API at test
// time: a self-signed CA and one server certificate it issued, written as PEM files.
#pragma once

#include <filesystem>
#include <string>

namespace harness {

struct TestPki {
  std::filesystem::path ca_certificate;      // trust this (e.g. SSL_CERT_FILE) to accept...
  std::filesystem::path server_certificate;  // ...this one (the chain: leaf, then the CA)
  std::filesystem::path server_key;
};

// Writes ca.pem, server.pem and server.key into `dir`. `subject_alt_names` is in OpenSSL's
// syntax, e.g. "DNS:localhost" or "DNS:localhost,IP:127.0.0.1". Throws on failure.
TestPki make_test_pki(const std::filesystem::path& dir, const std::string& subject_alt_names);

}  // namespace harness
