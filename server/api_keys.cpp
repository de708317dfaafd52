#include "server/api_keys.h"

#include <fmt/format.h>

#include <fstream>
#include <iterator>

namespace inferscope::server {
namespace {

bool isSpace(char c) { return c == ' ' || c == '\t' || c == '\r'; }

std::string_view trimmed(std::string_view s) {
    while (!s.empty() && isSpace(s.front())) s.remove_prefix(1);
    while (!s.empty() && isSpace(s.back())) s.remove_suffix(1);
    return s;
}

// Equal or not, in time that depends only on the lengths: every byte of the longer is visited.
bool sameBytes(std::string_view a, std::string_view b) {
    const size_t n = std::max(a.size(), b.size());
    unsigned diff = unsigned(a.size() != b.size());
    for (size_t i = 0; i < n; ++i) {
        const unsigned char x = i < a.size() ? static_cast<unsigned char>(a[i]) : 0;
        const unsigned char y = i < b.size() ? static_cast<unsigned char>(b[i]) : 0;
        diff |= unsigned(x ^ y);
    }
    return diff == 0;
}

bool iequalsAscii(std::string_view a, std::string_view b) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i) {
        const char x = (a[i] >= 'A' && a[i] <= 'Z') ? char(a[i] + 32) : a[i];
        const char y = (b[i] >= 'A' && b[i] <= 'Z') ? char(b[i] + 32) : b[i];
        if (x != y) return false;
    }
    return true;
}

}  // namespace

Result<void> ApiKeys::checkKey(std::string_view key) {
    if (key.empty()) return fail(ErrorKind::InvalidArgument, "an API key is empty");
    if (key.size() > kMaxKeyBytes) return fail(ErrorKind::InvalidArgument, fmt::format("an API key is longer than {} bytes", kMaxKeyBytes));
    for (char c : key)
        if (c <= ' ' || c > '~') return fail(ErrorKind::InvalidArgument, "an API key holds a space, a control character or a non-ASCII byte");
    return {};
}

Result<std::vector<std::string>> ApiKeys::parseKeyFile(std::string_view text) {
    std::vector<std::string> keys;
    size_t lineNo = 0;
    while (!text.empty()) {
        const size_t end = text.find('\n');
        const std::string_view line = trimmed(text.substr(0, end));
        text = end == std::string_view::npos ? std::string_view() : text.substr(end + 1);
        ++lineNo;
        if (line.empty() || line.front() == '#') continue;
        if (auto ok = checkKey(line); !ok) return fail(ErrorKind::InvalidArgument, fmt::format("line {}: {}", lineNo, ok.error().message));
        if (keys.size() == kMaxKeys) return fail(ErrorKind::InvalidArgument, fmt::format("more than {} keys", kMaxKeys));
        keys.emplace_back(line);
    }
    return keys;
}

Result<std::vector<std::string>> ApiKeys::readKeyFile(const std::string& path) {
    constexpr size_t kMaxFileBytes = 1u << 20;
    std::ifstream in(path, std::ios::binary);
    if (!in) return fail(ErrorKind::Io, "cannot read the API key file " + path);
    std::string text;
    text.resize(kMaxFileBytes + 1);
    in.read(text.data(), std::streamsize(text.size()));
    text.resize(size_t(in.gcount()));
    if (text.size() > kMaxFileBytes) return fail(ErrorKind::InvalidArgument, fmt::format("the API key file {} is over 1 MiB", path));
    auto keys = parseKeyFile(text);
    if (!keys) return fail(ErrorKind::InvalidArgument, fmt::format("the API key file {}, {}", path, keys.error().message));
    if (keys->empty()) return fail(ErrorKind::InvalidArgument, fmt::format("the API key file {} holds no key", path));
    return keys;
}

int ApiKeys::match(std::string_view authorization) const {
    constexpr std::string_view kScheme = "bearer ";
    if (authorization.size() <= kScheme.size() || !iequalsAscii(authorization.substr(0, kScheme.size()), kScheme)) return -1;
    const std::string_view token = trimmed(authorization.substr(kScheme.size()));
    int found = -1;
    for (size_t i = 0; i < keys_.size(); ++i)
        if (sameBytes(token, keys_[i]) && found < 0) found = int(i);
    return found;
}

std::string ApiKeys::masked(int index) const {
    if (index < 0 || size_t(index) >= keys_.size()) return "-";
    const std::string& key = keys_[size_t(index)];
    if (key.size() < 16) return fmt::format("key {}", index + 1);
    return fmt::format("key {} …{}", index + 1, key.substr(key.size() - 4));
}

}  // namespace inferscope::server
