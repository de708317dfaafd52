#include "catalog/source_files.h"

#include <algorithm>
#include <cctype>

#include "common/json_shape.h"

namespace inferscope::catalog {
namespace {

std::string_view trim(std::string_view s) {
    auto space = [](char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\f' || c == '\v'; };
    while (!s.empty() && space(s.front())) s.remove_prefix(1);
    while (!s.empty() && space(s.back())) s.remove_suffix(1);
    return s;
}

bool isHex64(std::string_view s) {
    return s.size() == 64 && std::all_of(s.begin(), s.end(), [](char c) { return std::isxdigit(static_cast<unsigned char>(c)); });
}

// A string member of a JSON object, if it is one.
std::optional<std::string> stringMember(const nlohmann::json& j, const char* key) {
    if (!j.is_object()) return std::nullopt;
    auto it = j.find(key);
    if (it == j.end() || !it->is_string()) return std::nullopt;
    return it->get<std::string>();
}

// Text with no NUL and no line breaks: what a path or a name from another tool's file must be.
bool plainText(std::string_view s) {
    return std::none_of(s.begin(), s.end(), [](char c) { return c == '\0' || c == '\n' || c == '\r'; });
}

}  // namespace

std::optional<nlohmann::json> parseBoundedJson(std::string_view text, uint64_t maxBytes, int maxDepth, size_t maxValues) {
    if (text.size() > maxBytes) return std::nullopt;
    if (jsonShapeError(text, JsonShapeLimits{maxDepth, maxValues})) return std::nullopt;
    nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded()) return std::nullopt;
    return j;
}

std::optional<std::vector<OllamaLayer>> parseOllamaManifest(std::string_view text) {
    auto j = parseBoundedJson(text, kMaxMetadataFileBytes);
    if (!j || !j->is_object()) return std::nullopt;
    auto layers = j->find("layers");
    if (layers == j->end() || !layers->is_array()) return std::nullopt;
    std::vector<OllamaLayer> out;
    for (const auto& l : *layers) {
        auto media = stringMember(l, "mediaType");
        auto digest = stringMember(l, "digest");
        if (!media || !digest) continue;
        // manifest/paths.go BlobsPath accepts only ^sha256[:-][0-9a-fA-F]{64}$
        if (digest->size() != 71 || digest->compare(0, 6, "sha256") != 0 || ((*digest)[6] != ':' && (*digest)[6] != '-') ||
            !isHex64(std::string_view(*digest).substr(7)))
            continue;
        OllamaLayer layer{*media, *digest, 0};
        auto size = l.find("size");
        if (size != l.end() && size->is_number_unsigned()) layer.size = size->get<uint64_t>();
        out.push_back(std::move(layer));
    }
    return out;
}

std::string ollamaBlobName(std::string_view digest) {
    std::string name(digest);
    std::replace(name.begin(), name.end(), ':', '-');
    return name;
}

std::string ollamaDisplayName(std::string_view host, std::string_view ns, std::string_view model, std::string_view tag) {
    auto same = [](std::string_view a, std::string_view b) {
        return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
                   return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
               });
    };
    std::string s;
    if (!same(host, "registry.ollama.ai")) s.append(host).append("/").append(ns).append("/");
    else if (!same(ns, "library")) s.append(ns).append("/");
    s.append(model).append(":").append(tag);
    return s;
}

std::optional<JanModelConfig> parseJanModelYml(std::string_view text) {
    if (text.size() > kMaxMetadataFileBytes) return std::nullopt;
    JanModelConfig config;
    bool havePath = false;
    size_t pos = 0;
    while (pos < text.size()) {
        const size_t end = std::min(text.find('\n', pos), text.size());
        std::string_view line = text.substr(pos, end - pos);
        pos = end + 1;
        if (line.empty() || line.front() == ' ' || line.front() == '\t' || line.front() == '#') continue;  // top level only
        const size_t colon = line.find(':');
        if (colon == std::string_view::npos) continue;
        const std::string_view key = trim(line.substr(0, colon));
        std::string_view value = trim(line.substr(colon + 1));
        if (key != "model_path" && key != "name") continue;
        std::string parsed;
        if (!value.empty() && (value.front() == '"' || value.front() == '\'')) {
            const char quote = value.front();
            const size_t close = value.find(quote, 1);
            if (close == std::string_view::npos) continue;
            parsed = std::string(value.substr(1, close - 1));
        } else {
            if (const size_t comment = value.find(" #"); comment != std::string_view::npos) value = trim(value.substr(0, comment));
            parsed = std::string(value);
        }
        if (!plainText(parsed)) continue;
        if (key == "model_path") {
            config.modelPath = std::move(parsed);
            havePath = !config.modelPath.empty();
        } else {
            config.name = std::move(parsed);
        }
    }
    if (!havePath) return std::nullopt;
    return config;
}

std::optional<std::string> parseJanModelJsonName(std::string_view text) {
    auto j = parseBoundedJson(text, kMaxMetadataFileBytes);
    if (!j || !j->is_object()) return std::nullopt;
    for (const char* key : {"name", "id"})
        if (auto v = stringMember(*j, key); v && !v->empty() && plainText(*v)) return v;
    return std::nullopt;
}

std::optional<std::string> parseIniValue(std::string_view text, std::string_view key) {
    if (text.size() > kMaxMetadataFileBytes) return std::nullopt;
    bool general = true;  // keys before any section belong to [General] for QSettings
    size_t pos = 0;
    while (pos < text.size()) {
        const size_t end = std::min(text.find('\n', pos), text.size());
        const std::string_view line = trim(text.substr(pos, end - pos));
        pos = end + 1;
        if (line.empty() || line.front() == ';' || line.front() == '#') continue;
        if (line.front() == '[') {
            general = line == "[General]";
            continue;
        }
        const size_t eq = line.find('=');
        if (!general || eq == std::string_view::npos || trim(line.substr(0, eq)) != key) continue;
        std::string_view value = trim(line.substr(eq + 1));
        if (value.size() >= 2 && value.front() == '"' && value.back() == '"') value = value.substr(1, value.size() - 2);
        if (value.empty() || !plainText(value)) return std::nullopt;
        return std::string(value);
    }
    return std::nullopt;
}

std::map<std::string, std::string> parseGpt4allModelsJson(std::string_view text) {
    std::map<std::string, std::string> names;
    auto j = parseBoundedJson(text, kMaxMetadataFileBytes);
    if (!j || !j->is_array()) return names;
    for (const auto& entry : *j) {
        auto file = stringMember(entry, "filename");
        auto name = stringMember(entry, "name");
        if (file && name && !file->empty() && !name->empty() && plainText(*file) && plainText(*name) && names.size() < 10000)
            names.emplace(*file, *name);
    }
    return names;
}

std::optional<std::string> parseLmStudioHomePointer(std::string_view text) {
    if (text.size() > 4096) return std::nullopt;
    const std::string_view path = trim(text);
    if (path.empty() || path.front() != '/' || !plainText(path)) return std::nullopt;
    return std::string(path);
}

std::optional<std::string> parseLmStudioDownloadsFolder(std::string_view text) {
    auto j = parseBoundedJson(text, kMaxMetadataFileBytes);
    if (!j) return std::nullopt;
    auto folder = stringMember(*j, "downloadsFolder");
    if (!folder || folder->empty() || folder->front() != '/' || !plainText(*folder)) return std::nullopt;
    return folder;
}

std::optional<std::string> parseLlamaCppMetadataUrl(std::string_view text) {
    auto j = parseBoundedJson(text, kMaxMetadataFileBytes);
    if (!j) return std::nullopt;
    auto url = stringMember(*j, "url");
    if (!url || url->empty() || url->size() > 4096 || !plainText(*url)) return std::nullopt;
    return url;
}

std::optional<std::string> hubNameFromResolveUrl(std::string_view url) {
    const size_t scheme = url.find("://");
    if (scheme == std::string_view::npos) return std::nullopt;
    std::string_view rest = url.substr(scheme + 3);
    const size_t slash = rest.find('/');
    if (slash == std::string_view::npos) return std::nullopt;
    rest = rest.substr(slash + 1);                       // org/repo/resolve/<rev>/<path>[?query]
    rest = rest.substr(0, std::min(rest.find('?'), rest.size()));
    rest = rest.substr(0, std::min(rest.find('#'), rest.size()));
    const size_t a = rest.find('/');
    if (a == std::string_view::npos || a == 0) return std::nullopt;
    const size_t b = rest.find('/', a + 1);
    if (b == std::string_view::npos || b == a + 1) return std::nullopt;
    std::string_view after = rest.substr(b + 1);
    if (!after.starts_with("resolve/")) return std::nullopt;
    after.remove_prefix(8);
    const size_t c = after.find('/');
    if (c == std::string_view::npos || c == 0 || c + 1 >= after.size()) return std::nullopt;
    if (!plainText(rest)) return std::nullopt;
    return std::string(rest.substr(0, b)) + "/" + std::string(after.substr(c + 1));
}

}  // namespace inferscope::catalog
