#pragma once
// What the scan (local_models.cpp: where each tool keeps its models, one entry per file, headers)
// and the readers of the tools' own layouts (local_model_layouts.cpp: Ollama's manifests, the
// Hugging Face hub cache, Jan's model files) share: the bounded folder walk, small files read
// whole, and a candidate file before its header is read. Private to catalog/.

#include <cstdint>
#include <filesystem>
#include <fmt/format.h>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "catalog/local_models.h"
#include "catalog/source_files.h"

namespace inferscope::catalog::local_detail {

namespace fs = std::filesystem;

// A file name ending in .gguf, in any case.
bool endsWithGguf(const std::string& name);

// A small file of another tool, read whole up to the bound (longer ones: nothing).
std::optional<std::string> readSmallFile(const fs::path& path, uint64_t maxBytes = kMaxMetadataFileBytes);

bool isDirectory(const fs::path& p);

// A candidate model file before its header is read.
struct Candidate {
    fs::path path;
    Source source;
    std::string name;
};

// Walks `root` depth-first without following symbolic links to folders (no loops), calling
// onFile(path, relative) for every file or link to one whose name ends in .gguf (any case),
// within the limits; notes what was cut or unreadable.
class Walker {
public:
    Walker(const ScanLimits& limits, std::vector<std::string>& notes) : limits_(limits), notes_(notes) {}

    template <class OnFile>
    void walk(const fs::path& root, OnFile&& onFile, int maxDepth = -1) {
        if (maxDepth < 0) maxDepth = limits_.maxDepth;
        size_t seen = 0;
        std::vector<std::pair<fs::path, int>> stack{{root, 0}};
        while (!stack.empty()) {
            auto [dir, depth] = std::move(stack.back());
            stack.pop_back();
            std::error_code ec;
            fs::directory_iterator it(dir, fs::directory_options::skip_permission_denied, ec);
            if (ec) {
                if (depth == 0 || ec != std::errc::permission_denied) continue;
                notes_.push_back(fmt::format("{}: not readable ({})", dir.string(), ec.message()));
                continue;
            }
            for (; it != fs::directory_iterator(); it.increment(ec)) {
                if (ec) break;
                if (++seen > limits_.maxEntries) {
                    notes_.push_back(fmt::format("{}: looked at the first {} entries only", root.string(), limits_.maxEntries));
                    return;
                }
                const fs::path& p = it->path();
                std::error_code sec;
                const fs::file_status own = it->symlink_status(sec);
                if (sec) continue;
                if (fs::is_directory(own)) {
                    if (depth + 1 <= maxDepth) stack.emplace_back(p, depth + 1);
                    continue;
                }
                const std::string name = p.filename().string();
                if (!endsWithGguf(name)) continue;
                onFile(p, p.lexically_relative(root));
            }
        }
    }

private:
    const ScanLimits& limits_;
    std::vector<std::string>& notes_;
};

// The model files of a tool's folder, as that tool lays them out (local_model_layouts.cpp).
void findOllama(const fs::path& root, std::vector<Candidate>& out, std::vector<std::string>& notes);
void findHuggingFace(const fs::path& hub, Walker& walker, std::vector<Candidate>& out);
void findJan(const fs::path& data, Walker& walker, std::vector<Candidate>& out);

}  // namespace inferscope::catalog::local_detail
