#pragma once
// Where the bundled default model (stories260K.gguf) is: beside an installed executable
// (../share/inferscope/models), in the source tree the build came from, or INFERSCOPE_MODEL_DIR.

#include <filesystem>
#include <optional>

namespace inferscope {

inline constexpr const char* kBundledModelFile = "stories260K.gguf";

std::optional<std::filesystem::path> findBundledModel();

}  // namespace inferscope
