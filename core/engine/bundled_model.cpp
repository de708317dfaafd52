#include "engine/bundled_model.h"

#include <cstdlib>
#include <system_error>
#include <vector>

namespace inferscope {

std::optional<std::filesystem::path> findBundledModel() {
    namespace fs = std::filesystem;
    std::vector<fs::path> candidates;
    if (const char* dir = std::getenv("INFERSCOPE_MODEL_DIR")) candidates.emplace_back(fs::path(dir) / kBundledModelFile);
    std::error_code ec;
    const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
    if (!ec) {
        candidates.push_back(exe.parent_path() / "../share/inferscope/models" / kBundledModelFile);  // installed
        candidates.push_back(exe.parent_path() / "models" / kBundledModelFile);                      // portable archive
    }
#ifdef INFERSCOPE_SOURCE_RESOURCES_DIR
    candidates.push_back(fs::path(INFERSCOPE_SOURCE_RESOURCES_DIR) / "models" / kBundledModelFile);  // build tree
#endif
    for (const auto& c : candidates)
        if (fs::is_regular_file(c, ec)) return fs::weakly_canonical(c, ec);
    return std::nullopt;
}

}  // namespace inferscope
