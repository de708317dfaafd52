// The model files of the tools whose folders are more than a tree of GGUFs (see local_models.h for
// each layout and the tool's source that says so): Ollama's manifests naming blobs, the Hugging
// Face hub cache's snapshots, Jan's model.yml and model.json; and the small reads every source
// shares (local_models_detail.h).
#include <algorithm>
#include <fstream>
#include <map>

#include "catalog/local_models_detail.h"
#include "catalog/ollama_names.h"

namespace inferscope::catalog::local_detail {

bool endsWithGguf(const std::string& name) {
    if (name.size() < 5) return false;
    std::string tail = name.substr(name.size() - 5);
    std::transform(tail.begin(), tail.end(), tail.begin(), [](unsigned char c) { return char(std::tolower(c)); });
    return tail == ".gguf";
}

std::optional<std::string> readSmallFile(const fs::path& path, uint64_t maxBytes) {
    std::ifstream in(path, std::ios::binary);
    if (!in) return std::nullopt;
    std::string bytes(size_t(maxBytes) + 1, '\0');
    in.read(bytes.data(), std::streamsize(bytes.size()));
    if (in.bad()) return std::nullopt;
    bytes.resize(size_t(in.gcount()));
    if (bytes.size() > maxBytes) return std::nullopt;
    return bytes;
}

bool isDirectory(const fs::path& p) {
    std::error_code ec;
    return fs::is_directory(p, ec);
}

void findOllama(const fs::path& root, std::vector<Candidate>& out, std::vector<std::string>& notes) {
    std::error_code ec;
    for (const auto& [blob, names] : ollamaModelBlobs(root, &notes)) {
        if (!fs::exists(blob, ec)) {
            // "sha256-<hex>" is the digest "sha256:<hex>"; its first 12 hex digits name it.
            std::string digest = blob.filename().string();
            digest[6] = ':';
            for (const auto& name : names)
                notes.push_back(fmt::format("{}: its model blob {} is missing (a pull not finished?)", name, digest.substr(0, 19)));
            continue;
        }
        std::string joined;
        for (const auto& n : names) joined += (joined.empty() ? "" : ", ") + n;
        out.push_back({blob, Source::Ollama, joined});
    }
}

void findHuggingFace(const fs::path& hub, Walker& walker, std::vector<Candidate>& out) {
    std::error_code ec;
    for (fs::directory_iterator it(hub, fs::directory_options::skip_permission_denied, ec); !ec && it != fs::directory_iterator();
         it.increment(ec)) {
        const std::string folder = it->path().filename().string();
        if (!folder.starts_with("models--") || !it->is_directory(ec)) continue;
        // models--<org>--<repo> (file_download.py repo_folder_name: "/" replaced by "--")
        std::string repo = folder.substr(8);
        for (size_t at = repo.find("--"); at != std::string::npos; at = repo.find("--", at + 1)) repo.replace(at, 2, "/");
        const fs::path snapshots = it->path() / "snapshots";
        if (!isDirectory(snapshots)) continue;
        for (fs::directory_iterator rev(snapshots, fs::directory_options::skip_permission_denied, ec);
             !ec && rev != fs::directory_iterator(); rev.increment(ec)) {
            walker.walk(rev->path(), [&](const fs::path& p, const fs::path& rel) {
                out.push_back({p, Source::HuggingFace, repo + "/" + rel.generic_string()});
            });
        }
    }
}

void findJan(const fs::path& data, Walker& walker, std::vector<Candidate>& out) {
    // Tauri releases: llamacpp/models/<id>/model.yml naming the file (relative to the data folder or absolute).
    const fs::path models = data / "llamacpp" / "models";
    if (isDirectory(models)) {
        std::error_code ec;
        std::vector<std::pair<fs::path, int>> stack{{models, 0}};
        size_t seen = 0;
        while (!stack.empty() && seen < 20000) {
            auto [dir, depth] = stack.back();
            stack.pop_back();
            const fs::path yml = dir / "model.yml";
            if (fs::is_regular_file(yml, ec)) {
                auto text = readSmallFile(yml);
                if (auto config = text ? parseJanModelYml(*text) : std::nullopt) {
                    fs::path file(config->modelPath);
                    if (file.is_relative()) file = data / file;
                    const std::string id = dir.lexically_relative(models).generic_string();
                    if (endsWithGguf(file.filename().string())) out.push_back({file, Source::Jan, config->name.empty() ? id : config->name});
                }
                continue;
            }
            if (depth >= 4) continue;
            for (fs::directory_iterator it(dir, fs::directory_options::skip_permission_denied, ec); !ec && it != fs::directory_iterator();
                 it.increment(ec)) {
                ++seen;
                if (it->is_directory(ec) && !it->is_symlink(ec)) stack.emplace_back(it->path(), depth + 1);
            }
        }
    }
    // The 0.4 layout: models/<id>/ with model.json and the GGUF beside it.
    const fs::path legacy = data / "models";
    if (!isDirectory(legacy)) return;
    std::error_code ec;
    for (fs::directory_iterator it(legacy, fs::directory_options::skip_permission_denied, ec); !ec && it != fs::directory_iterator();
         it.increment(ec)) {
        if (!it->is_directory(ec)) continue;
        const std::string id = it->path().filename().string();
        auto text = readSmallFile(it->path() / "model.json");
        const std::string name = text ? parseJanModelJsonName(*text).value_or(id) : id;
        walker.walk(it->path(), [&](const fs::path& p, const fs::path&) { out.push_back({p, Source::Jan, name}); }, 0);
    }
}

}  // namespace inferscope::catalog::local_detail
