#include "engine/stop_strings.h"

#include <algorithm>

namespace inferscope {

StopStringMatcher::StopStringMatcher(std::vector<std::string> stops) {
    for (auto& s : stops)
        if (!s.empty()) stops_.push_back(std::move(s));
}

std::optional<size_t> StopStringMatcher::find(std::string_view text) const {
    std::optional<size_t> best;
    for (const auto& s : stops_) {
        const size_t at = text.find(s);
        if (at != std::string_view::npos && (!best || at < *best)) best = at;
    }
    return best;
}

size_t StopStringMatcher::safeLength(std::string_view text) const {
    size_t safe = text.size();
    for (const auto& s : stops_) {
        // the longest suffix of text that is a proper prefix of s
        const size_t maxLen = std::min(text.size(), s.size() - 1);
        for (size_t len = maxLen; len > 0; --len) {
            if (text.substr(text.size() - len) == std::string_view(s).substr(0, len)) {
                safe = std::min(safe, text.size() - len);
                break;
            }
        }
    }
    return safe;
}

}  // namespace inferscope
