#include <iostream>

#include "supervisor/commands.hpp"

namespace sb::supervisor {

int run_serve(const std::string&, std::string_view) {
  std::cerr << "Error: serve is not built yet\n";
  return 1;
}

int run_workers(const std::string&, std::string_view, bool) {
  std::cerr << "Error: workers is not built yet\n";
  return 1;
}

}  // namespace sb::supervisor
