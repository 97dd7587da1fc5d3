// Asio's TLS layer, compiled once, for the programs that dial wss:// (the supervisor's
// pty dialers) or serve it (the tests' fake pods).
#include <boost/asio/ssl/impl/src.hpp>
