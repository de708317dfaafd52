#pragma once
// What an answer's text was held to (structured output): nothing, a JSON object, JSON matching a
// schema, or a GBNF grammar, with the schema's or the grammar's text. The app gives it with each
// generation (compiled for this machine's engine, sent as `response_format` / `grammar` to a
// server) and keeps it in the answer's origin, so a stored answer can be checked against what it
// was asked to be long after the setting changed (grammar/structured_check.h).

#include <cstdint>
#include <string>
#include <string_view>

namespace inferscope {

enum class StructuredKind : uint8_t { Off, Json, JsonSchema, Gbnf };

// As stored: "off", "json", "json_schema", "gbnf"; any other name reads as Off.
constexpr std::string_view structuredKindName(StructuredKind kind) {
    switch (kind) {
        case StructuredKind::Json: return "json";
        case StructuredKind::JsonSchema: return "json_schema";
        case StructuredKind::Gbnf: return "gbnf";
        default: return "off";
    }
}
constexpr StructuredKind structuredKindFromName(std::string_view name) {
    return name == "json" ? StructuredKind::Json : name == "json_schema" ? StructuredKind::JsonSchema
         : name == "gbnf" ? StructuredKind::Gbnf : StructuredKind::Off;
}

struct StructuredConstraint {
    StructuredKind kind = StructuredKind::Off;
    std::string text;  // the schema (JSON) or the grammar (GBNF); empty for Off and Json
    bool active() const { return kind != StructuredKind::Off; }
    bool operator==(const StructuredConstraint&) const = default;
};

}  // namespace inferscope
