#include "catalog/ollama_names.h"

#include <algorithm>
#include <fmt/format.h>
#include <fstream>

#include "catalog/source_files.h"

namespace inferscope::catalog {
namespace fs = std::filesystem;
namespace {

std::optional<std::string> readManifest(const fs::path& path) {
    std::error_code ec;
    const auto size = fs::file_size(path, ec);
    if (ec || size > kMaxMetadataFileBytes) return std::nullopt;
    std::ifstream in(path, std::ios::binary);
    std::string text(size_t(size), '\0');
    if (!in.read(text.data(), std::streamsize(text.size()))) return std::nullopt;
    return text;
}

}  // namespace

std::map<fs::path, std::vector<std::string>> ollamaModelBlobs(const fs::path& root, std::vector<std::string>* notes) {
    std::map<fs::path, std::vector<std::string>> namesOfBlob;
    const fs::path manifests = root / "manifests";
    std::error_code ec;
    if (!fs::is_directory(manifests, ec)) return namesOfBlob;
    size_t seen = 0;
    auto children = [&](const fs::path& dir, auto&& each) {
        std::error_code e;
        for (fs::directory_iterator it(dir, fs::directory_options::skip_permission_denied, e); !e && it != fs::directory_iterator();
             it.increment(e)) {
            if (++seen > 20000) return;
            each(*it);
        }
    };
    children(manifests, [&](const fs::directory_entry& host) {
        if (!host.is_directory(ec)) return;
        children(host.path(), [&](const fs::directory_entry& ns) {
            if (!ns.is_directory(ec)) return;
            children(ns.path(), [&](const fs::directory_entry& model) {
                if (!model.is_directory(ec)) return;
                children(model.path(), [&](const fs::directory_entry& tag) {
                    if (!tag.is_regular_file(ec)) return;
                    auto text = readManifest(tag.path());
                    auto layers = text ? parseOllamaManifest(*text) : std::nullopt;
                    if (!layers) {
                        if (notes) notes->push_back(fmt::format("{}: not a readable Ollama manifest", tag.path().string()));
                        return;
                    }
                    for (const auto& layer : *layers) {
                        if (layer.mediaType != kOllamaModelMediaType) continue;
                        namesOfBlob[root / "blobs" / ollamaBlobName(layer.digest)].push_back(
                            ollamaDisplayName(host.path().filename().string(), ns.path().filename().string(),
                                              model.path().filename().string(), tag.path().filename().string()));
                    }
                });
            });
        });
    });
    for (auto& [blob, names] : namesOfBlob) std::sort(names.begin(), names.end());
    return namesOfBlob;
}

std::optional<std::string> ollamaNameOfBlob(const fs::path& blob) {
    const std::string file = blob.filename().string();
    if (!file.starts_with("sha256-") || blob.parent_path().filename() != "blobs") return std::nullopt;
    const auto names = ollamaModelBlobs(blob.parent_path().parent_path());
    const auto it = names.find(blob);
    if (it == names.end() || it->second.empty()) return std::nullopt;
    return it->second.front();
}

}  // namespace inferscope::catalog
