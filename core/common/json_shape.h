#pragma once
// A JSON text's shape bounded before it is parsed (a request body, a hub listing, a metadata
// file): nesting depth and number of values, read in one pass over the bytes (strings and escapes
// skipped) without building anything. The parser and every later step (a recursive dump, a
// destructor) then only ever see bounded trees.

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace inferscope {

struct JsonShapeLimits {
    int maxDepth = 64;          // arrays and objects inside each other
    size_t maxValues = 65536;   // values of any kind (members and elements), at most
    // Members of any one object. nlohmann::ordered_json (the JSON schema converter's: members in
    // the order written) looks up each member it inserts in a list, so an object's parse costs the
    // square of its members; this bounds it.
    size_t maxMembers = size_t(-1);
};

// Why the body is refused (names the limit, never the body's content), or nothing. Bodies that
// are not JSON at all pass: the parser says what is wrong with them.
std::optional<std::string> jsonShapeError(std::string_view body, const JsonShapeLimits& limits = {});

}  // namespace inferscope::server
