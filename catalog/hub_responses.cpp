#include "catalog/hub_responses.h"

#include <algorithm>
#include <cctype>
#include <charconv>

#include "catalog/source_files.h"

namespace inferscope::catalog {
namespace {

using nlohmann::json;

bool isHex64(std::string_view s) {
    return s.size() == 64 && std::all_of(s.begin(), s.end(), [](char c) { return std::isxdigit(static_cast<unsigned char>(c)); });
}

std::string lower(std::string_view s) {
    std::string out(s);
    std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return char(std::tolower(c)); });
    return out;
}

uint64_t unsignedMember(const json& j, const char* key) {
    auto it = j.find(key);
    return it != j.end() && it->is_number_unsigned() ? it->get<uint64_t>() : 0;
}

std::string_view trim(std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r' || s.back() == '\n')) s.remove_suffix(1);
    return s;
}

}  // namespace

bool validRepoId(std::string_view repo) {
    const size_t slash = repo.find('/');
    if (slash == std::string_view::npos || repo.find('/', slash + 1) != std::string_view::npos) return false;
    for (std::string_view part : {repo.substr(0, slash), repo.substr(slash + 1)}) {
        if (part.empty() || part.size() > 96 || part.find("--") != std::string_view::npos || part.find("..") != std::string_view::npos)
            return false;
        if (part.front() == '-' || part.front() == '.' || part.back() == '-' || part.back() == '.') return false;
        for (char c : part)
            if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_' && c != '.') return false;
    }
    return true;
}

bool validRepoPath(std::string_view path) {
    if (path.empty() || path.size() > 1024 || path.front() == '/') return false;
    size_t start = 0;
    while (start <= path.size()) {
        const size_t end = std::min(path.find('/', start), path.size());
        const std::string_view part = path.substr(start, end - start);
        if (part.empty() || part == "." || part == "..") return false;
        for (char c : part)
            if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f || c == '\\') return false;
        start = end + 1;
    }
    return true;
}

std::optional<std::vector<HubRepo>> parseSearchResponse(std::string_view body) {
    auto j = parseBoundedJson(body, kMaxListingBytes, 16, 1 << 20);
    if (!j || !j->is_array()) return std::nullopt;
    std::vector<HubRepo> repos;
    for (const json& item : *j) {
        if (!item.is_object()) continue;
        auto id = item.find("id");
        if (id == item.end() || !id->is_string()) id = item.find("modelId");
        if (id == item.end() || !id->is_string() || !validRepoId(id->get_ref<const std::string&>())) continue;
        HubRepo r;
        r.id = id->get<std::string>();
        r.downloads = unsignedMember(item, "downloads");
        r.likes = unsignedMember(item, "likes");
        if (auto g = item.find("gated"); g != item.end()) r.gated = g->is_string() ? !g->get_ref<const std::string&>().empty() : g->is_boolean() && g->get<bool>();
        if (auto m = item.find("lastModified"); m != item.end() && m->is_string() && m->get_ref<const std::string&>().size() <= 64)
            r.lastModified = m->get<std::string>();
        repos.push_back(std::move(r));
        if (repos.size() >= 1000) break;
    }
    return repos;
}

std::optional<std::vector<HubFile>> parseTreeResponse(std::string_view body) {
    auto j = parseBoundedJson(body, kMaxListingBytes, 16, 1 << 20);
    if (!j || !j->is_array()) return std::nullopt;
    std::vector<HubFile> files;
    for (const json& item : *j) {
        if (!item.is_object()) continue;
        auto type = item.find("type");
        auto path = item.find("path");
        if (type == item.end() || *type != "file" || path == item.end() || !path->is_string() ||
            !validRepoPath(path->get_ref<const std::string&>()))
            continue;
        HubFile f;
        f.path = path->get<std::string>();
        f.size = unsignedMember(item, "size");
        if (auto lfs = item.find("lfs"); lfs != item.end() && lfs->is_object()) {
            auto oid = lfs->find("oid");
            if (oid == lfs->end() || !oid->is_string()) oid = lfs->find("sha256");
            if (oid != lfs->end() && oid->is_string() && isHex64(oid->get_ref<const std::string&>())) f.sha256 = lower(oid->get<std::string>());
            if (const uint64_t size = unsignedMember(*lfs, "size"); size) f.size = size;
        }
        files.push_back(std::move(f));
        if (files.size() >= 100000) break;
    }
    return files;
}

std::optional<std::string> nextPageLink(std::string_view header) {
    // <url>; rel="next", <url2>; rel="prev"
    size_t pos = 0;
    while (pos < header.size()) {
        const size_t open = header.find('<', pos);
        if (open == std::string_view::npos) return std::nullopt;
        const size_t close = header.find('>', open);
        if (close == std::string_view::npos) return std::nullopt;
        const size_t end = std::min(header.find(',', close), header.size());
        const std::string_view params = header.substr(close + 1, end - close - 1);
        const std::string p = lower(params);
        if (p.find("rel=\"next\"") != std::string::npos || p.find("rel=next") != std::string::npos) {
            std::string_view url = header.substr(open + 1, close - open - 1);
            if (url.empty() || url.size() > 4096 || originOf(url).empty()) return std::nullopt;
            return std::string(url);
        }
        pos = end + 1;
    }
    return std::nullopt;
}

int retryAfterSeconds(std::string_view value, int fallback) {
    value = trim(value);
    int seconds = 0;
    const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), seconds);
    if (ec != std::errc() || end != value.data() + value.size() || seconds < 0) return fallback;
    return seconds;
}

std::optional<uint64_t> contentRangeStart(std::string_view value) {
    value = trim(value);
    if (!value.starts_with("bytes ")) return std::nullopt;
    value.remove_prefix(6);
    uint64_t start = 0;
    const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), start);
    if (ec != std::errc() || end == value.data() + value.size() || *end != '-') return std::nullopt;
    return start;
}

std::string originOf(std::string_view url) {
    const std::string l = lower(url.substr(0, std::min<size_t>(url.size(), 8)));
    size_t skip = 0;
    if (l.starts_with("https://")) skip = 8;
    else if (l.starts_with("http://")) skip = 7;
    else return "";
    const size_t end = std::min(url.find_first_of("/?#", skip), url.size());
    const std::string_view authority = url.substr(skip, end - skip);
    if (authority.empty() || authority.find('@') != std::string_view::npos) return "";  // no user:password@ in a URL we follow
    for (char c : authority)
        if (static_cast<unsigned char>(c) <= 0x20 || c == 0x7f || c == '\\') return "";
    return lower(url.substr(0, skip)) + lower(authority);
}

std::optional<std::string> resolveRedirect(std::string_view from, std::string_view location) {
    location = trim(location);
    if (location.empty() || location.size() > 8192) return std::nullopt;
    for (char c : location)
        if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) return std::nullopt;
    if (!originOf(location).empty()) return std::string(location);
    if (location.front() == '/' && (location.size() < 2 || location[1] != '/')) {
        const std::string origin = originOf(from);
        if (origin.empty()) return std::nullopt;
        return origin + std::string(location);
    }
    return std::nullopt;  // scheme-relative, other schemes, relative paths: not what the hub sends
}

}  // namespace inferscope::catalog
