// A second build of the switchboard without building twice: copies of `switchboard` and
// `switchboard-worker` in which the build's id (docs/architecture.md, "Trust boundaries")
// is replaced by another, so that the programs and everything that checks a build take
// them for another build. What a switch to a new build is tested with.
#pragma once

#include <filesystem>
#include <string>

namespace harness {

// Copies both programs from `from` into `into`, each occurrence of `build_nonce` (the
// part of the build id after its "+") replaced by `other_nonce` of the same length.
// Throws when the nonce is not found in both programs.
void copy_as_other_build(const std::filesystem::path& from, const std::filesystem::path& into,
                         const std::string& build_nonce, const std::string& other_nonce);

}  // namespace harness
