#include "harness/other_build.hpp"

#include <sys/stat.h>

#include <fstream>
#include <iterator>
#include <stdexcept>

namespace harness {

void copy_as_other_build(const std::filesystem::path& from, const std::filesystem::path& into,
                         const std::string& build_nonce, const std::string& other_nonce) {
  if (build_nonce.empty() || build_nonce.size() != other_nonce.size())
    throw std::invalid_argument("a build nonce and its replacement of one length are needed");
  std::filesystem::create_directories(into);
  for (const char* program : {"switchboard", "switchboard-worker"}) {
    std::ifstream in(from / program, std::ios::binary);
    std::string bytes{std::istreambuf_iterator<char>(in), {}};
    std::size_t replaced = 0;
    for (auto at = bytes.find(build_nonce); at != std::string::npos;
         at = bytes.find(build_nonce, at + build_nonce.size())) {
      bytes.replace(at, other_nonce.size(), other_nonce);
      ++replaced;
    }
    if (replaced == 0) throw std::runtime_error(std::string("no build id found in ") + program);
    // Written beside and renamed into place: a running copy keeps its own file.
    const auto target = into / program;
    const auto written = into / (std::string(program) + ".new");
    std::ofstream(written, std::ios::binary) << bytes;
    ::chmod(written.c_str(), 0755);
    std::filesystem::rename(written, target);
  }
}

}  // namespace harness
