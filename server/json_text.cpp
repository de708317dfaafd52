// Members and elements of a JSON text as written (see json_text.h).
#include "server/json_text.h"

#include <nlohmann/json.hpp>

namespace inferscope::server::request_detail {
namespace {

size_t skipSpace(std::string_view s, size_t i) {
    while (i < s.size() && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r')) ++i;
    return i;
}
size_t stringEnd(std::string_view s, size_t i) {  // s[i] == '"'; past the closing quote
    for (++i; i < s.size(); ++i) {
        if (s[i] == '\\') ++i;
        else if (s[i] == '"') return i + 1;
    }
    return s.size();
}
size_t valueEnd(std::string_view s, size_t i) {
    if (i >= s.size()) return s.size();
    if (s[i] == '"') return stringEnd(s, i);
    if (s[i] == '{' || s[i] == '[') {
        int depth = 0;
        for (; i < s.size(); ++i) {
            const char c = s[i];
            if (c == '"') {
                i = stringEnd(s, i) - 1;
            } else if (c == '{' || c == '[') {
                ++depth;
            } else if ((c == '}' || c == ']') && --depth == 0) {
                return i + 1;
            }
        }
        return s.size();
    }
    while (i < s.size() && std::string_view(",}] \t\n\r").find(s[i]) == std::string_view::npos) ++i;
    return i;
}

}  // namespace

std::optional<std::string_view> memberText(std::string_view s, std::string_view key) {
    size_t i = skipSpace(s, 0);
    if (i >= s.size() || s[i] != '{') return std::nullopt;
    i = skipSpace(s, i + 1);
    std::optional<std::string_view> found;
    while (i < s.size() && s[i] == '"') {
        const size_t keyEnd = stringEnd(s, i);
        const std::string_view quoted = s.substr(i, keyEnd - i);
        bool match = quoted.size() == key.size() + 2 && quoted.substr(1, key.size()) == key;
        if (!match && quoted.find('\\') != std::string_view::npos) {  // an escaped name: as the parser reads it
            const nlohmann::json name = nlohmann::json::parse(quoted, nullptr, false);
            match = name.is_string() && name.get_ref<const std::string&>() == key;
        }
        i = skipSpace(s, skipSpace(s, keyEnd) + 1);  // past ':'
        const size_t end = valueEnd(s, i);
        if (match) found = s.substr(i, end - i);
        i = skipSpace(s, end);
        if (i >= s.size() || s[i] != ',') break;
        i = skipSpace(s, i + 1);
    }
    return found;
}

std::optional<std::vector<std::string_view>> elementTexts(std::string_view s, size_t limit) {
    size_t i = skipSpace(s, 0);
    if (i >= s.size() || s[i] != '[') return std::nullopt;
    std::vector<std::string_view> out;
    i = skipSpace(s, i + 1);
    while (i < s.size() && s[i] != ']' && out.size() < limit) {
        const size_t end = valueEnd(s, i);
        out.push_back(s.substr(i, end - i));
        i = skipSpace(s, end);
        if (i >= s.size() || s[i] != ',') break;
        i = skipSpace(s, i + 1);
    }
    return out;
}

}  // namespace inferscope::server::request_detail
