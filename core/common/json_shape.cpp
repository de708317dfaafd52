#include "common/json_shape.h"

#include <fmt/format.h>

namespace inferscope {

std::optional<std::string> jsonShapeError(std::string_view body, const JsonShapeLimits& limits) {
    int depth = 0;
    size_t values = 1;  // the top-level value
    bool inString = false;
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
                break;
            case ']':
            case '}': depth = depth > 0 ? depth - 1 : 0; break;
            case ',':
                if (++values > limits.maxValues)
                    return fmt::format("the request body holds more than {} JSON values", limits.maxValues);
                break;
            default: break;
        }
    }
    if (values > limits.maxValues) return fmt::format("the request body holds more than {} JSON values", limits.maxValues);
    return std::nullopt;
}

}  // namespace inferscope
