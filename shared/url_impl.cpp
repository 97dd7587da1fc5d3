// Boost.URL, compiled once for the whole program (its header-only mode).
#include <boost/url/src.hpp>
