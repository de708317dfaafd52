#pragma once
// Where the bundled default model (stories260K.gguf) is, first found wins:
//   1. $INFERSCOPE_MODEL_DIR
//   2. <exe dir>/../share/inferscope/models   installed (/usr/bin → /usr/share) and the .tar.gz
//                                             archive (inferscope-X-Linux/bin → …/share)
//   3. <exe dir>/models                       a flat portable folder
//   4. <source>/resources/models              only for an executable inside the build tree, so an
//                                             installed copy never depends on the source checkout

#include <filesystem>
#include <optional>
#include <vector>

namespace inferscope {

inline constexpr const char* kBundledModelFile = "stories260K.gguf";

// The places searched, in order, for an executable at `executable` (an absolute path) and the
// value of INFERSCOPE_MODEL_DIR (nullptr when unset). Paths need not exist.
std::vector<std::filesystem::path> bundledModelCandidates(const std::filesystem::path& executable, const char* modelDirEnv);

// The first candidate that is a regular file, made canonical.
std::optional<std::filesystem::path> findBundledModelFor(const std::filesystem::path& executable, const char* modelDirEnv);

// For this process (/proc/self/exe and the environment).
std::optional<std::filesystem::path> findBundledModel();

}  // namespace inferscope
