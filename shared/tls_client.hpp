// TLS toward a server we dial (an openab-pty pod, a switchboard): the client context and
// the per-connection checks.
#pragma once

#include <openssl/ssl.h>

#include <boost/asio/ssl/context.hpp>
#include <boost/system/error_code.hpp>
#include <filesystem>
#include <memory>
#include <string>

namespace sb {

// A client TLS context: TLS 1.2 or newer, the peer verified against OpenSSL's default
// verify paths (honouring SSL_CERT_FILE / SSL_CERT_DIR) and, when given, the certificate
// authorities in `extra_authorities` (a PEM file) besides them. Throws on failure.
std::shared_ptr<boost::asio::ssl::context> make_tls_context(
    const std::filesystem::path& extra_authorities = {});
// SNI and the name (or address) the certificate must carry. Returns a problem, or "".
std::string prepare_tls(SSL* handle, const std::string& host);
// Why the TLS handshake with `peer` failed, with the certificate check's verdict when
// the certificate was the reason.
std::string tls_failure(SSL* handle, const std::string& peer,
                        const boost::system::error_code& error);

}  // namespace sb
