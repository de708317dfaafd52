#include "engine/bundled_model.h"

#include <algorithm>
#include <cstdlib>
#include <system_error>

namespace inferscope {
namespace {

namespace fs = std::filesystem;

// True when `path` is `dir` or below it, after resolving both (symlinks, "..").
[[maybe_unused]] bool isInside(const fs::path& path, const fs::path& dir) {
    std::error_code ec;
    const fs::path p = fs::weakly_canonical(path, ec);
    if (ec) return false;
    const fs::path d = fs::weakly_canonical(dir, ec);
    if (ec || d.empty()) return false;
    // weakly_canonical keeps a trailing separator as an empty last element: drop it.
    auto dEnd = d.end();
    if (!d.has_filename() && dEnd != d.begin()) --dEnd;
    return std::mismatch(d.begin(), dEnd, p.begin(), p.end()).first == dEnd;
}

}  // namespace

std::vector<fs::path> bundledModelCandidates(const fs::path& executable, const char* modelDirEnv) {
    std::vector<fs::path> candidates;
    if (modelDirEnv && *modelDirEnv) candidates.emplace_back(fs::path(modelDirEnv) / kBundledModelFile);
    if (!executable.empty()) {
        // Lexically, not through "..": the path from /proc/self/exe is already canonical.
        const fs::path dir = executable.parent_path();
        candidates.push_back(dir.parent_path() / "share" / "inferscope" / "models" / kBundledModelFile);  // installed, archive
        candidates.push_back(dir / "models" / kBundledModelFile);                                // flat portable folder
    }
#if defined(INFERSCOPE_SOURCE_RESOURCES_DIR) && defined(INFERSCOPE_BUILD_DIR)
    if (!executable.empty() && isInside(executable, INFERSCOPE_BUILD_DIR))
        candidates.push_back(fs::path(INFERSCOPE_SOURCE_RESOURCES_DIR) / "models" / kBundledModelFile);  // build tree
#endif
    return candidates;
}

std::optional<fs::path> findBundledModelFor(const fs::path& executable, const char* modelDirEnv) {
    std::error_code ec;
    for (const auto& c : bundledModelCandidates(executable, modelDirEnv))
        if (fs::is_regular_file(c, ec)) return fs::weakly_canonical(c, ec);
    return std::nullopt;
}

std::optional<fs::path> findBundledModel() {
    std::error_code ec;
    const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
    return findBundledModelFor(ec ? fs::path() : exe, std::getenv("INFERSCOPE_MODEL_DIR"));
}

}  // namespace inferscope
