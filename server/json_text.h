#pragma once
// A member's or an element's text inside a JSON text as the client wrote it: schemas are compiled
// and tools shown to the model with their members in the order written (nlohmann::json sorts
// them, and parsing a whole body again as ordered_json costs the square of a large object's
// members). The text is known to be valid, bounded JSON (parsed once already). Private to server/.

#include <optional>
#include <string_view>
#include <vector>

namespace inferscope::server::request_detail {

// The text of member `key` of the object `s` (the last one of that name, as the parser keeps).
std::optional<std::string_view> memberText(std::string_view s, std::string_view key);
// The texts of the elements of the array `s`, at most `limit` of them; nothing when `s` is no array.
std::optional<std::vector<std::string_view>> elementTexts(std::string_view s, size_t limit);

}  // namespace inferscope::server::request_detail
