#pragma once
// The small files other tools keep beside their models, parsed as untrusted text: each parser
// takes the bytes (read with a bound: kMaxMetadataFileBytes) and returns plain values or nothing,
// never throws, and never repeats the text in an error. Fuzzed by fuzz/fuzz_catalog_files.cpp.
//
// Where each format comes from (the projects' own sources):
//   Ollama manifest      ollama/ollama manifest/manifest.go (Manifest, Layer), manifest/layer.go,
//                        types/model/name.go (DisplayShortest, Filepath)
//   Jan model.yml        janhq/jan extensions/llamacpp-extension/src/index.ts (folder layout),
//                        src-tauri/plugins/tauri-plugin-llamacpp/guest-js/types.ts (ModelConfig)
//   Jan model.json       janhq/jan docs/docs/guides/quickstart.md (the 0.4 layout: ~/jan/models/<id>/)
//   GPT4All.ini          nomic-ai/gpt4all gpt4all-chat/src/mysettings.cpp (modelPath)
//   models3.json         nomic-ai/gpt4all gpt4all-chat/src/modellist.cpp (filename -> name)
//   LM Studio pointer    lmstudio-ai/lmstudio-js packages/lms-common-server/src/findLMStudioHome.ts
//   llama.cpp <f>.json   ggerganov/llama.cpp common/common.cpp (common_download_file: url, etag)

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace inferscope::catalog {

// The most bytes read of any such file (a GPT4All models3.json is ~100 KB, a manifest < 2 KB).
inline constexpr uint64_t kMaxMetadataFileBytes = uint64_t(1) << 20;

// JSON text parsed only when it is at most maxBytes long, its nesting and value count bounded
// (common/json_shape.h) and well-formed; nothing otherwise.
std::optional<nlohmann::json> parseBoundedJson(std::string_view text, uint64_t maxBytes, int maxDepth = 32,
                                               size_t maxValues = 1 << 20);

// ---- Ollama ----
struct OllamaLayer {
    std::string mediaType;
    std::string digest;  // "sha256:<64 hex>", validated
    uint64_t size = 0;
};
// The layers of a manifest (schemaVersion 2): only those whose digest is a valid sha256.
std::optional<std::vector<OllamaLayer>> parseOllamaManifest(std::string_view text);
inline constexpr std::string_view kOllamaModelMediaType = "application/vnd.ollama.image.model";
// The blob file name of a digest: "sha256:ab…" -> "sha256-ab…" (manifest/paths.go BlobsPath).
std::string ollamaBlobName(std::string_view digest);
// How `ollama list` names the model of manifests/<host>/<namespace>/<model>/<tag>:
// "llama3.2:1b", "user/model:tag", "host/ns/model:tag" (types/model/name.go DisplayShortest).
std::string ollamaDisplayName(std::string_view host, std::string_view ns, std::string_view model, std::string_view tag);

// ---- Jan ----
struct JanModelConfig {
    std::string modelPath;  // absolute, or relative to Jan's data folder
    std::string name;
};
// model.yml's top-level `model_path:` and `name:` (plain or quoted scalars); nothing without model_path.
std::optional<JanModelConfig> parseJanModelYml(std::string_view text);
// The 0.4 layout's model.json: its "name" (or "id"); nothing when not a JSON object.
std::optional<std::string> parseJanModelJsonName(std::string_view text);

// ---- GPT4All ----
// A QSettings INI file's value of `key` in [General] (or before any section); nothing if absent.
std::optional<std::string> parseIniValue(std::string_view text, std::string_view key);
// models3.json: file name -> display name.
std::map<std::string, std::string> parseGpt4allModelsJson(std::string_view text);

// ---- LM Studio ----
// ~/.lmstudio-home-pointer: one path, trimmed; nothing when empty or not absolute.
std::optional<std::string> parseLmStudioHomePointer(std::string_view text);
// settings.json's "downloadsFolder", when set.
std::optional<std::string> parseLmStudioDownloadsFolder(std::string_view text);

// ---- llama.cpp ----
// <file>.json beside a download: its "url".
std::optional<std::string> parseLlamaCppMetadataUrl(std::string_view text);
// "https://host/org/repo/resolve/<rev>/<path>" -> "org/repo/<path>"; nothing for another shape.
std::optional<std::string> hubNameFromResolveUrl(std::string_view url);

}  // namespace inferscope::catalog
