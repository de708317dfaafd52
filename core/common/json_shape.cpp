#include "common/json_shape.h"

#include <fmt/format.h>
#include <vector>

namespace inferscope {

std::optional<std::string> jsonShapeError(std::string_view body, const JsonShapeLimits& limits) {
    int depth = 0;
    size_t values = 1;  // the top-level value
    bool inString = false;
    const bool countMembers = limits.maxMembers != size_t(-1);
    // Per open container (while depth <= maxDepth): whether it is an object, and its members so far.
    std::vector<std::pair<bool, size_t>> open;
    for (size_t i = 0; i < body.size(); ++i) {
        const char c = body[i];
        if (inString) {
            if (c == '\\') ++i;  // the escaped character, whatever it is
            else if (c == '"') inString = false;
            continue;
        }
        switch (c) {
            case '"': inString = true; break;
            case '[':
            case '{':
                if (++depth > limits.maxDepth)
                    return fmt::format("the request body nests JSON arrays and objects deeper than {} levels", limits.maxDepth);
                ++values;  // its first element or member, if any (an empty one over-counts by one)
                if (countMembers) open.emplace_back(c == '{', 1);
                break;
            case ']':
            case '}':
                depth = depth > 0 ? depth - 1 : 0;
                if (countMembers && !open.empty()) open.pop_back();
                break;
            case ',':
                if (++values > limits.maxValues)
                    return fmt::format("the request body holds more than {} JSON values", limits.maxValues);
                if (countMembers && !open.empty() && open.back().first && ++open.back().second > limits.maxMembers)
                    return fmt::format("the request body has an object of more than {} members", limits.maxMembers);
                break;
            default: break;
        }
    }
    if (values > limits.maxValues) return fmt::format("the request body holds more than {} JSON values", limits.maxValues);
    return std::nullopt;
}

}  // namespace inferscope
