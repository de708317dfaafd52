#pragma once
// Finds stop strings in streamed output and says how much text is safe to show: a tail that
// could still grow into a stop string is held back until it can't.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace inferscope {

class StopStringMatcher {
public:
    explicit StopStringMatcher(std::vector<std::string> stops);
    // Offset of the earliest complete stop string in text, if any.
    std::optional<size_t> find(std::string_view text) const;
    // Length of the prefix of text that cannot be the start of a stop string.
    size_t safeLength(std::string_view text) const;
    bool empty() const { return stops_.empty(); }

private:
    std::vector<std::string> stops_;
};

}  // namespace inferscope
