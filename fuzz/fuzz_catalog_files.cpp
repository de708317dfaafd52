// libFuzzer target: the files other tools keep beside their models, as the model library reads
// them (catalog/source_files.h: Ollama manifests, Jan's model.yml and model.json, GPT4All's INI and
// models3.json, LM Studio's home pointer and settings, llama.cpp's download metadata) and our own
// header cache (catalog/header_cache.h). The first byte picks the parser; inputs go up to the 1 MiB
// every such file is read with (the cache's own bound is 32 MiB; its parser is the same JSON path).
// Besides the sanitizers it checks what the scan relies on: a digest is always a valid sha256, a
// blob name never leaves blobs/, names and paths carry no NUL or line break, and a cache parsed,
// written and parsed again is the same cache.
#include <cstdint>
#include <cstdio>

#include <string>
#include <string_view>

#include "catalog/header_cache.h"
#include "catalog/source_files.h"
#include "require.h"

namespace {

using namespace inferscope::catalog;

bool plain(std::string_view s) { return s.find('\0') == std::string_view::npos && s.find('\n') == std::string_view::npos; }

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size < 1 || size > kMaxMetadataFileBytes + 1) return 0;
    const std::string_view text(reinterpret_cast<const char*>(data) + 1, size - 1);
    switch (data[0] % 9) {
        case 0:
            if (auto layers = parseOllamaManifest(text))
                for (const auto& l : *layers) {
                    FUZZ_REQUIRE(l.digest.size() == 71 && l.digest.starts_with("sha256"), "a layer digest is a sha256");
                    const std::string blob = ollamaBlobName(l.digest);
                    FUZZ_REQUIRE(blob.find('/') == std::string::npos && blob.find("..") == std::string::npos, "a blob name stays in blobs/");
                }
            break;
        case 1:
            if (auto c = parseJanModelYml(text)) FUZZ_REQUIRE(!c->modelPath.empty() && plain(c->modelPath) && plain(c->name), "model.yml values are plain");
            break;
        case 2:
            if (auto n = parseJanModelJsonName(text)) FUZZ_REQUIRE(!n->empty() && plain(*n), "model.json names are plain");
            break;
        case 3:
            if (auto v = parseIniValue(text, "modelPath")) FUZZ_REQUIRE(!v->empty() && plain(*v), "INI values are plain");
            break;
        case 4:
            for (const auto& [file, name] : parseGpt4allModelsJson(text)) FUZZ_REQUIRE(plain(file) && plain(name), "models3.json names are plain");
            break;
        case 5:
            if (auto p = parseLmStudioHomePointer(text)) FUZZ_REQUIRE(p->front() == '/' && plain(*p), "the home pointer is an absolute path");
            if (auto p = parseLmStudioDownloadsFolder(text)) FUZZ_REQUIRE(p->front() == '/' && plain(*p), "downloadsFolder is absolute");
            break;
        case 6:
            if (auto url = parseLlamaCppMetadataUrl(text)) FUZZ_REQUIRE(plain(*url), "the url is plain");
            if (auto name = hubNameFromResolveUrl(text)) FUZZ_REQUIRE(plain(*name) && !name->empty(), "a hub name is plain");
            break;
        default: {
            const HeaderCache cache = HeaderCache::parse(text);
            FUZZ_REQUIRE(cache.size() <= kMaxHeaderCacheEntries, "the cache is bounded");
            const std::string written = cache.serialize();
            const HeaderCache again = HeaderCache::parse(written);
            FUZZ_REQUIRE(again.size() == cache.size(), "a cache written and read again keeps its entries");
            FUZZ_REQUIRE(again.serialize() == written, "a cache written and read again is the same");
            break;
        }
    }
    return 0;
}
