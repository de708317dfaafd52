#pragma once
// The GGUF models a user already has: found in the folders of the tools they came from and in our
// own, their headers read (with a cache keyed on path, size and modification time), nothing ever
// written to another tool's folder. Qt-free and blocking: the app calls scanLocalModels on a worker
// thread (progress callback, cancel flag); the CLI calls it directly (`inferscope-cli models list`).
//
// Where each source is looked for (and the source files of each tool that say so):
//   ollama       $OLLAMA_MODELS, ~/.ollama/models, /usr/share/ollama/.ollama/models (the Linux
//                service's home): manifests/<host>/<namespace>/<model>/<tag> (JSON) whose layer
//                "application/vnd.ollama.image.model" is blobs/sha256-<hex>
//                (ollama/ollama envconfig/config.go Models, manifest/manifest.go Manifests,
//                manifest/paths.go BlobsPath, types/model/name.go, docs/faq.mdx)
//   lmstudio     the folder named in ~/.lmstudio-home-pointer, else ~/.cache/lm-studio, else
//                ~/.lmstudio; its settings.json "downloadsFolder" or models/, as
//                <publisher>/<repo>/<file>.gguf (lmstudio-ai/lmstudio-js findLMStudioHome.ts)
//   gpt4all      GPT4All.ini's modelPath ($XDG_CONFIG_HOME/nomic.ai/), else
//                $XDG_DATA_HOME/nomic.ai/GPT4All/: every *.gguf below it but incomplete-*; names
//                from $XDG_CACHE_HOME/nomic.ai/GPT4All/models3.json (nomic-ai/gpt4all
//                gpt4all-chat/src/mysettings.cpp, modellist.cpp processModelDirectory, main.cpp)
//   jan          $XDG_DATA_HOME/Jan/data/llamacpp/models/<id>/model.yml (model_path, name) and the
//                0.4 layout ~/jan/models/<id>/ (model.json beside the GGUF)
//                (janhq/jan extensions/llamacpp-extension/src/index.ts, tauri-plugin-llamacpp types.ts)
//   huggingface  $HF_HUB_CACHE, else $HF_HOME/hub, else $XDG_CACHE_HOME/huggingface/hub:
//                models--<org>--<repo>/snapshots/<commit>/<path> (symlinks into blobs/)
//                (huggingface/huggingface_hub src/huggingface_hub/constants.py, file_download.py)
//   llama.cpp    $LLAMA_CACHE, else $XDG_CACHE_HOME/llama.cpp: <org>_<repo>_<file>.gguf with
//                <file>.json {"url": ...} beside it (ggerganov/llama.cpp common/common.cpp
//                fs_get_cache_directory, common/arg.cpp)
//   inferscope   $XDG_DATA_HOME/inferscope/models/<org>/<repo>/<file> (what `models pull` writes)
//   folder       folders the user adds: every *.gguf below them
// Unset XDG variables mean ~/.local/share, ~/.cache, ~/.config.

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "catalog/model_summary.h"

namespace inferscope::catalog {

enum class Source { Ollama, LmStudio, Gpt4All, Jan, HuggingFace, LlamaCpp, Inferscope, Folder };
// "ollama", "lmstudio", "gpt4all", "jan", "huggingface", "llama.cpp", "inferscope", "folder"
std::string_view sourceName(Source source);

// The variables the folders follow; fromProcess() reads them, tests set them.
struct Environment {
    std::string home;
    std::string xdgDataHome, xdgCacheHome, xdgConfigHome;
    std::string ollamaModels, hfHome, hfHubCache, llamaCache;
    std::string systemOllamaModels = "/usr/share/ollama/.ollama/models";
    static Environment fromProcess();
    std::filesystem::path dataHome() const;    // $XDG_DATA_HOME or ~/.local/share
    std::filesystem::path cacheHome() const;   // $XDG_CACHE_HOME or ~/.cache
    std::filesystem::path configHome() const;  // $XDG_CONFIG_HOME or ~/.config
};

// Our own folder (where `models pull` downloads) and the header cache's file.
std::filesystem::path inferscopeModelsFolder(const Environment& env);
std::filesystem::path headerCacheFile(const Environment& env);

// A folder that is looked in, and for which source.
struct SearchRoot {
    Source source;
    std::filesystem::path folder;
};
std::vector<SearchRoot> searchRoots(const Environment& env, const std::vector<std::filesystem::path>& userFolders);

struct LocalModel {
    std::filesystem::path path;    // the file as the tool keeps it (an Ollama blob, a snapshot link)
    Source source = Source::Folder;
    std::string name;              // as that tool names it ("llama3.2:1b", "org/repo/file.gguf", ...)
    uint64_t bytes = 0;
    int64_t mtimeNs = 0;
    std::optional<ModelSummary> summary;  // the header's facts, when it could be read
    std::string error;                    // why not (not a GGUF file, truncated, unreadable)
};

struct ScanLimits {
    int maxDepth = 8;             // folders below a root
    size_t maxEntries = 100000;   // directory entries looked at per root: a huge folder is cut, with a note
};

struct ScanOptions {
    Environment env = Environment::fromProcess();
    std::vector<std::filesystem::path> folders;           // the user's own, source "folder"
    ScanLimits limits;
    std::optional<std::filesystem::path> cacheFile;       // the header cache; none: every header read
    // Called after each header (read or from the cache) with (done, total); may be null.
    std::function<void(size_t done, size_t total)> progress;
    const std::atomic<bool>* cancel = nullptr;            // set from another thread: stops between files
};

struct ScanReport {
    std::vector<LocalModel> models;   // sources in the order above, then by name
    std::vector<std::string> notes;   // what was skipped and why (a folder cut short, a manifest without its blob)
    size_t headersRead = 0;           // parsed this time
    size_t headersFromCache = 0;      // answered by the cache
    bool cancelled = false;
};

ScanReport scanLocalModels(const ScanOptions& options);

}  // namespace inferscope::catalog
