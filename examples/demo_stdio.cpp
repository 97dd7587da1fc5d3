#include "examples/demo_stdio.hpp"

#include <iostream>
#include <string>

#include "examples/demo_mcp.hpp"

namespace demo {

// One request at a time, in order: a stdio server has one client, which waits for what
// it asked.
int serve_stdio() {
  std::string line;
  while (std::getline(std::cin, line)) {
    const json message = json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (message.is_discarded() || !is_request(message)) continue;
    std::cout << reply_to(message).dump() << '\n' << std::flush;
  }
  return 0;
}

}  // namespace demo
