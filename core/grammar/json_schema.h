#pragma once
// JSON Schema -> GBNF (gbnf.h), the subset docs/STRUCTURED_OUTPUT.md lists: objects (properties
// in declared order, required, additionalProperties), arrays (items, minItems, maxItems), enum,
// const, the types string / number / integer / boolean / null (and arrays of types), string
// minLength / maxLength and the formats date, time, date-time and uuid, $ref to #/$defs/... or
// #/definitions/... (or "#"), anyOf and oneOf. Keywords outside the subset that would change what
// is valid (pattern, allOf, not, if/then/else, patternProperties, prefixItems, ...) are refused by
// name rather than ignored; annotations (title, description, examples, default, $schema, $id)
// and numeric bounds (minimum, maximum, ..., documented as not enforced) are ignored.
//
// The grammar produces compact JSON with optional whitespace (at most one newline and 20 spaces or
// tabs of indentation between tokens), so a model may format it as it likes.

#include <string>
#include <string_view>

#include "common/error.h"

namespace inferscope::grammar {

struct JsonSchemaLimits {
    size_t maxTextBytes = size_t(1) << 20;  // schema text
    int maxDepth = 64;                      // objects and arrays nested in the schema text
    size_t maxValues = 65536;               // JSON values in the schema text
    size_t maxGrammarBytes = size_t(1) << 20;  // the GBNF produced
    uint32_t maxBound = 1000;               // minItems, maxItems, minLength, maxLength
};

// The schema's grammar as GBNF text (root rule `root`), or InvalidArgument naming the schema
// location ("at /properties/age: ...").
Result<std::string> jsonSchemaToGbnf(std::string_view schemaText, const JsonSchemaLimits& limits = {});

// Any JSON object, the grammar of OpenAI's `json_object` response format.
std::string jsonObjectGbnf();
// Any JSON value.
std::string jsonValueGbnf();

}  // namespace inferscope::grammar
