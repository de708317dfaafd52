// The scan of the GGUF models a user already has (see local_models.h): the folders each tool keeps
// them in, one entry per file whichever source found it first, and their headers from the cache or
// read. How each tool lays out its folder is read in local_model_layouts.cpp.
#include "catalog/local_models.h"

#include <sys/stat.h>

#include <algorithm>
#include <cstdlib>
#include <fmt/format.h>
#include <map>
#include <set>
#include <unordered_set>

#include "catalog/header_cache.h"
#include "catalog/local_models_detail.h"
#include "catalog/source_files.h"

namespace inferscope::catalog {
namespace fs = std::filesystem;
namespace {

using local_detail::Candidate;
using local_detail::findHuggingFace;
using local_detail::findJan;
using local_detail::findOllama;
using local_detail::isDirectory;
using local_detail::readSmallFile;
using local_detail::Walker;

std::string envOr(const char* name) {
    const char* v = std::getenv(name);
    return v ? std::string(v) : std::string();
}

}  // namespace

std::string_view sourceName(Source source) {
    switch (source) {
        case Source::Ollama: return "ollama";
        case Source::LmStudio: return "lmstudio";
        case Source::Gpt4All: return "gpt4all";
        case Source::Jan: return "jan";
        case Source::HuggingFace: return "huggingface";
        case Source::LlamaCpp: return "llama.cpp";
        case Source::Inferscope: return "inferscope";
        case Source::Folder: return "folder";
    }
    return "?";
}

Environment Environment::fromProcess() {
    Environment e;
    e.home = envOr("HOME");
    e.xdgDataHome = envOr("XDG_DATA_HOME");
    e.xdgCacheHome = envOr("XDG_CACHE_HOME");
    e.xdgConfigHome = envOr("XDG_CONFIG_HOME");
    e.ollamaModels = envOr("OLLAMA_MODELS");
    e.hfHome = envOr("HF_HOME");
    e.hfHubCache = envOr("HF_HUB_CACHE");
    if (e.hfHubCache.empty()) e.hfHubCache = envOr("HUGGINGFACE_HUB_CACHE");  // the older name constants.py still reads
    e.llamaCache = envOr("LLAMA_CACHE");
    return e;
}

// XDG's rule: a relative value is ignored.
static fs::path xdg(const std::string& value, const std::string& home, const char* fallback) {
    if (!value.empty() && value.front() == '/') return value;
    return fs::path(home) / fallback;
}
fs::path Environment::dataHome() const { return xdg(xdgDataHome, home, ".local/share"); }
fs::path Environment::cacheHome() const { return xdg(xdgCacheHome, home, ".cache"); }
fs::path Environment::configHome() const { return xdg(xdgConfigHome, home, ".config"); }

fs::path inferscopeModelsFolder(const Environment& env) { return env.dataHome() / "inferscope" / "models"; }
fs::path headerCacheFile(const Environment& env) { return env.cacheHome() / "inferscope" / "model-headers.json"; }

std::vector<SearchRoot> searchRoots(const Environment& env, const std::vector<fs::path>& userFolders) {
    std::vector<SearchRoot> roots;
    auto add = [&](Source s, const fs::path& p) {
        if (p.empty()) return;
        for (const auto& r : roots)
            if (r.source == s && r.folder == p) return;
        roots.push_back({s, p});
    };
    const fs::path home(env.home);
    if (!env.ollamaModels.empty()) add(Source::Ollama, env.ollamaModels);
    if (!env.home.empty()) add(Source::Ollama, home / ".ollama" / "models");
    add(Source::Ollama, env.systemOllamaModels);

    // LM Studio's home (findLMStudioHome.ts): the pointer file, else ~/.cache/lm-studio if present, else ~/.lmstudio.
    if (!env.home.empty()) {
        fs::path lmHome = home / ".lmstudio";
        if (auto text = readSmallFile(home / ".lmstudio-home-pointer", 4096); text && parseLmStudioHomePointer(*text))
            lmHome = *parseLmStudioHomePointer(*text);
        else if (isDirectory(home / ".cache" / "lm-studio"))
            lmHome = home / ".cache" / "lm-studio";
        fs::path models = lmHome / "models";
        if (auto text = readSmallFile(lmHome / "settings.json"); text)
            if (auto folder = parseLmStudioDownloadsFolder(*text)) models = *folder;
        add(Source::LmStudio, models);
    }

    // GPT4All: the modelPath setting, else QStandardPaths::AppLocalDataLocation.
    fs::path gpt4all = env.dataHome() / "nomic.ai" / "GPT4All";
    if (auto text = readSmallFile(env.configHome() / "nomic.ai" / "GPT4All.ini"))
        if (auto path = parseIniValue(*text, "modelPath"); path && path->front() == '/') gpt4all = *path;
    add(Source::Gpt4All, gpt4all);

    add(Source::Jan, env.dataHome() / "Jan" / "data");
    if (!env.home.empty()) add(Source::Jan, home / "jan");

    fs::path hub;
    if (!env.hfHubCache.empty()) hub = env.hfHubCache;
    else if (!env.hfHome.empty()) hub = fs::path(env.hfHome) / "hub";
    else hub = env.cacheHome() / "huggingface" / "hub";
    add(Source::HuggingFace, hub);

    add(Source::LlamaCpp, !env.llamaCache.empty() ? fs::path(env.llamaCache) : env.cacheHome() / "llama.cpp");
    add(Source::Inferscope, inferscopeModelsFolder(env));
    for (const auto& f : userFolders) add(Source::Folder, f);
    return roots;
}

ScanReport scanLocalModels(const ScanOptions& options) {
    ScanReport report;
    Walker walker(options.limits, report.notes);
    std::vector<Candidate> candidates;
    const Environment& env = options.env;

    for (const SearchRoot& root : searchRoots(env, options.folders)) {
        if (options.cancel && options.cancel->load()) break;
        if (!isDirectory(root.folder)) {
            std::error_code ec;
            if (root.source == Source::Folder) report.notes.push_back(fmt::format("{}: no such folder", root.folder.string()));
            else if (fs::exists(root.folder, ec) || ec == std::errc::permission_denied)
                report.notes.push_back(fmt::format("{}: not readable", root.folder.string()));
            continue;
        }
        switch (root.source) {
            case Source::Ollama: findOllama(root.folder, candidates, report.notes); break;
            case Source::HuggingFace: findHuggingFace(root.folder, walker, candidates); break;
            case Source::Jan: findJan(root.folder, walker, candidates); break;
            case Source::Gpt4All: {
                std::map<std::string, std::string> names;
                if (auto text = readSmallFile(env.cacheHome() / "nomic.ai" / "GPT4All" / "models3.json")) names = parseGpt4allModelsJson(*text);
                walker.walk(root.folder, [&](const fs::path& p, const fs::path&) {
                    const std::string file = p.filename().string();
                    if (file.starts_with("incomplete")) return;  // modellist.cpp: a download in progress
                    auto it = names.find(file);
                    candidates.push_back({p, Source::Gpt4All, it != names.end() ? it->second : file});
                });
                break;
            }
            case Source::LlamaCpp:
                walker.walk(root.folder, [&](const fs::path& p, const fs::path&) {
                    std::string name = p.filename().string();
                    if (auto text = readSmallFile(p.string() + ".json"))
                        if (auto url = parseLlamaCppMetadataUrl(*text))
                            if (auto hubName = hubNameFromResolveUrl(*url)) name = *hubName;
                    candidates.push_back({p, Source::LlamaCpp, name});
                }, 0);
                break;
            case Source::LmStudio:
            case Source::Inferscope:
            case Source::Folder:
                walker.walk(root.folder, [&](const fs::path& p, const fs::path& rel) {
                    candidates.push_back({p, root.source, rel.generic_string()});
                });
                break;
        }
    }

    // One entry per file: the first source that found it (a snapshot link and an Ollama blob of the
    // same bytes are two files; a folder the user added inside a tool's is the same file).
    std::set<std::string> seenFiles;
    HeaderCache cache = options.cacheFile ? HeaderCache::load(*options.cacheFile) : HeaderCache{};
    std::unordered_set<std::string> present;
    std::vector<LocalModel> models;
    for (const Candidate& c : candidates) {
        std::error_code ec;
        const fs::path canonical = fs::canonical(c.path, ec);
        if (ec) {
            report.notes.push_back(fmt::format("{}: {} (a broken link?)", c.path.string(), ec.message()));
            continue;
        }
        if (!seenFiles.insert(canonical.string()).second) continue;
        struct stat st{};
        if (::stat(canonical.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
        LocalModel m;
        m.path = c.path;
        m.source = c.source;
        m.name = c.name;
        m.bytes = uint64_t(st.st_size);
        m.mtimeNs = int64_t(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
        models.push_back(std::move(m));
    }

    for (size_t i = 0; i < models.size(); ++i) {
        if (options.cancel && options.cancel->load()) {
            report.cancelled = true;
            models.resize(i);
            break;
        }
        LocalModel& m = models[i];
        std::error_code ec;
        const std::string key = fs::canonical(m.path, ec).string();
        present.insert(key);
        if (const CachedHeader* hit = cache.find(key, m.bytes, m.mtimeNs)) {
            m.summary = hit->summary;
            m.error = hit->error;
            ++report.headersFromCache;
        } else {
            CachedHeader entry{m.bytes, m.mtimeNs, std::nullopt, {}};
            auto file = GgufFile::open(m.path);
            if (!file) {
                entry.error = file.error().message;
            } else if (auto summary = summarizeModel(*file); !summary) {
                entry.error = summary.error().message;
            } else {
                entry.summary = std::move(*summary);
            }
            m.summary = entry.summary;
            m.error = entry.error;
            // An unreadable file (permissions) may become readable: only what the file says is kept.
            if (entry.summary || file) cache.put(key, std::move(entry));
            else if (!file && file.error().kind == ErrorKind::BadFile) cache.put(key, std::move(entry));
            ++report.headersRead;
        }
        if (options.progress) options.progress(i + 1, models.size());
    }
    if (options.cacheFile && !report.cancelled) {
        cache.retainOnly(present);
        if (cache.changed())
            if (auto saved = cache.save(*options.cacheFile); !saved) report.notes.push_back(saved.error().message);
    }
    std::stable_sort(models.begin(), models.end(), [](const LocalModel& a, const LocalModel& b) {
        return a.source != b.source ? a.source < b.source : a.name < b.name;
    });
    report.models = std::move(models);
    return report;
}

}  // namespace inferscope::catalog
