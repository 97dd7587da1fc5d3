// Reading a file whole: the loader reads the config file so, and `check` each secret_file.
#pragma once

#include <filesystem>
#include <string>

namespace sb::config {

struct FileRead {
  std::string content;
  int error = 0;  // errno when the file could not be read
};

FileRead read_whole_file(const std::filesystem::path& path);

}  // namespace sb::config
