#include "shared/tls_client.hpp"

#include <openssl/x509_vfy.h>

#include <boost/asio/ip/address.hpp>
#include <boost/asio/ssl.hpp>
#include <stdexcept>

#include "base/asio_names.hpp"

namespace sb {

using namespace sb::asio_names;

std::shared_ptr<ssl::context> make_tls_context(const std::filesystem::path& extra_authorities) {
  auto context = std::make_shared<ssl::context>(ssl::context::tls_client);
  context->set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 |
                       ssl::context::no_sslv3 | ssl::context::no_tlsv1 | ssl::context::no_tlsv1_1);
  SSL_CTX_set_min_proto_version(context->native_handle(), TLS1_2_VERSION);
  context->set_default_verify_paths();
  if (!extra_authorities.empty()) {
    boost::system::error_code error;
    context->load_verify_file(extra_authorities.string(), error);
    if (error)
      throw std::runtime_error("cannot read certificate authorities from " +
                               extra_authorities.string() + ": " + error.message());
  }
  context->set_verify_mode(ssl::verify_peer);
  return context;
}

std::string prepare_tls(SSL* handle, const std::string& host) {
  boost::system::error_code not_an_address;
  net::ip::make_address(host, not_an_address);
  if (!not_an_address) {
    // An IP literal: no SNI (RFC 6066), and the certificate must list the address.
    if (X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(handle), host.c_str()) != 1)
      return "cannot check the certificate against " + host;
    return "";
  }
  if (SSL_set_tlsext_host_name(handle, host.c_str()) != 1)
    return "cannot send the server name " + host;
  if (SSL_set1_host(handle, host.c_str()) != 1)
    return "cannot check the certificate against " + host;
  return "";
}

std::string tls_failure(SSL* handle, const std::string& peer,
                        const boost::system::error_code& error) {
  std::string why = "TLS with " + peer + ": " + error.message();
  if (const long verify = SSL_get_verify_result(handle); verify != X509_V_OK)
    why.append(" (").append(X509_verify_cert_error_string(verify)).append(")");
  return why;
}

}  // namespace sb
