// Asio and Beast, compiled once for the whole program (BOOST_ASIO_SEPARATE_COMPILATION /
// BOOST_BEAST_SEPARATE_COMPILATION). TLS lives apart in asio_ssl_impl.cpp, so that a
// worker, which never speaks TLS, does not load libssl.
#include <boost/asio/impl/src.hpp>
#include <boost/beast/src.hpp>
