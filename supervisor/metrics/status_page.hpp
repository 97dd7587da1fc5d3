// The status page (docs/metrics.md, "Status page"): supervisor/metrics/status_page.html, built
// into the binary by CMake (status_page.cpp.in), served by the metrics listener.
#pragma once

#include <string_view>

namespace sb::supervisor {

std::string_view status_page_html();

}  // namespace sb::supervisor
