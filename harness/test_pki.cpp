#include "harness/test_pki.hpp"

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <cstdio>
#include <memory>
#include <stdexcept>

namespace harness {
namespace {

struct KeyFree {
  void operator()(EVP_PKEY* key) const { EVP_PKEY_free(key); }
};
struct CertFree {
  void operator()(X509* cert) const { X509_free(cert); }
};
using Key = std::unique_ptr<EVP_PKEY, KeyFree>;
using Cert = std::unique_ptr<X509, CertFree>;

void check(bool ok, const char* what) {
  if (!ok) throw std::runtime_error(std::string("test PKI: ") + what + " failed");
}

Key new_key() {
  Key key(EVP_EC_gen("P-256"));
  check(key != nullptr, "EC key generation");
  return key;
}

void add_extension(X509* cert, X509* issuer, int nid, const std::string& value) {
  X509V3_CTX context;
  X509V3_set_ctx_nodb(&context);
  X509V3_set_ctx(&context, issuer, cert, nullptr, nullptr, 0);
  X509_EXTENSION* extension = X509V3_EXT_conf_nid(nullptr, &context, nid, value.c_str());
  check(extension != nullptr, "making an extension");
  const int added = X509_add_ext(cert, extension, -1);
  X509_EXTENSION_free(extension);
  check(added == 1, "adding an extension");
}

// An unsigned certificate for `key` named `common_name`, issued by `issuer` (itself when
// `issuer` is null: self-signed).
Cert new_certificate(EVP_PKEY* key, const std::string& common_name, X509* issuer, long serial) {
  Cert cert(X509_new());
  check(cert != nullptr, "X509_new");
  check(X509_set_version(cert.get(), 2) == 1, "setting the version");
  check(ASN1_INTEGER_set(X509_get_serialNumber(cert.get()), serial) == 1, "setting the serial");
  check(X509_gmtime_adj(X509_getm_notBefore(cert.get()), -3600) != nullptr, "notBefore");
  check(X509_gmtime_adj(X509_getm_notAfter(cert.get()), 24 * 3600) != nullptr, "notAfter");
  check(X509_set_pubkey(cert.get(), key) == 1, "setting the key");
  X509_NAME* name = X509_get_subject_name(cert.get());
  check(X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                                   reinterpret_cast<const unsigned char*>(common_name.c_str()), -1,
                                   -1, 0) == 1,
        "naming the subject");
  check(X509_set_issuer_name(cert.get(), issuer ? X509_get_subject_name(issuer) : name) == 1,
        "naming the issuer");
  X509* signer = issuer ? issuer : cert.get();
  add_extension(cert.get(), signer, NID_subject_key_identifier, "hash");
  if (issuer) add_extension(cert.get(), signer, NID_authority_key_identifier, "keyid:always");
  return cert;
}

void sign(X509* cert, EVP_PKEY* key) {
  check(X509_sign(cert, key, EVP_sha256()) > 0, "signing");
}

void write_pem(const std::filesystem::path& path, X509* first, X509* second = nullptr) {
  std::FILE* file = std::fopen(path.c_str(), "w");
  check(file != nullptr, "opening a PEM file");
  bool ok = PEM_write_X509(file, first) == 1;
  if (second) ok = ok && PEM_write_X509(file, second) == 1;
  std::fclose(file);
  check(ok, "writing a certificate");
}

void write_key(const std::filesystem::path& path, EVP_PKEY* key) {
  std::FILE* file = std::fopen(path.c_str(), "w");
  check(file != nullptr, "opening a key file");
  const bool ok = PEM_write_PrivateKey(file, key, nullptr, nullptr, 0, nullptr, nullptr) == 1;
  std::fclose(file);
  check(ok, "writing a key");
}

}  // namespace

TestPki make_test_pki(const std::filesystem::path& dir, const std::string& subject_alt_names) {
  const Key ca_key = new_key();
  const Cert ca = new_certificate(ca_key.get(), "switchboard test CA", nullptr, 1);
  add_extension(ca.get(), ca.get(), NID_basic_constraints, "critical,CA:TRUE");
  add_extension(ca.get(), ca.get(), NID_key_usage, "critical,keyCertSign,cRLSign");
  sign(ca.get(), ca_key.get());

  const Key server_key = new_key();
  const Cert server = new_certificate(server_key.get(), "fake pod", ca.get(), 2);
  add_extension(server.get(), ca.get(), NID_basic_constraints, "critical,CA:FALSE");
  add_extension(server.get(), ca.get(), NID_key_usage, "critical,digitalSignature");
  add_extension(server.get(), ca.get(), NID_ext_key_usage, "serverAuth");
  add_extension(server.get(), ca.get(), NID_subject_alt_name, subject_alt_names);
  sign(server.get(), ca_key.get());

  TestPki pki{dir / "ca.pem", dir / "server.pem", dir / "server.key"};
  write_pem(pki.ca_certificate, ca.get());
  write_pem(pki.server_certificate, server.get(), ca.get());
  write_key(pki.server_key, server_key.get());
  return pki;
}

}  // namespace harness
