#pragma once
// The JSON Schema -> GBNF converter's state (json_schema.h's jsonSchemaToGbnf), shared by the files
// it is split over: json_schema.cpp (rule names, the grammar's size, the walk over a schema's
// keywords, $ref) and json_schema_types.cpp (the rules of a string, an array and an object). Private
// to grammar/.

#include <cstddef>
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <string_view>

#include "grammar/json_schema.h"

namespace inferscope::grammar::schema_detail {

using Json = nlohmann::ordered_json;

// A GBNF literal for these bytes.
std::string literal(std::string_view s);

class Converter {
public:
    explicit Converter(const JsonSchemaLimits& limits) : limits_(limits) {}

    Result<std::string> run(const Json& schema);

private:
    // ---- rules and limits (json_schema.cpp) ---------------------------------------------------
    bool err(const std::string& where, std::string_view what);
    std::string ruleName(const std::string& where);
    // A new rule for `body`; returns its name.
    std::string addRule(const std::string& where, std::string body);
    // The grammar so far (and `more` bytes about to be added) within its limit; checked as it grows
    // so that a schema whose grammar would be huge (many optional members: quadratic) stops early.
    bool withinLimit(const std::string& where, size_t more = 0);
    // A location's segment for a named member: its name, or its position when names are not repeated.
    std::string segment(const std::string& name, size_t index) const;

    // ---- the walk (json_schema.cpp) -----------------------------------------------------------
    bool visit(const Json& schema, const std::string& where, std::string& out);
    bool visitInner(const Json& schema, const std::string& where, std::string& out);
    bool visitRef(const Json& ref, const std::string& where, std::string& out);

    // ---- the types (json_schema_types.cpp) ----------------------------------------------------
    bool bound(const Json& schema, const char* key, const std::string& where, uint32_t& out, bool& present);
    bool visitType(const Json& schema, const std::string& type, const std::string& where, std::string& out);
    bool visitString(const Json& schema, const std::string& where, std::string& out);
    bool visitArray(const Json& schema, const std::string& where, std::string& out);
    bool visitObject(const Json& schema, const std::string& where, std::string& out);

    JsonSchemaLimits limits_;
    const Json* root_ = nullptr;
    std::map<std::string, std::string> rules_;
    std::set<std::string> reserved_{"root", "space", "char", "string", "integral-part", "number", "integer", "boolean",
                                    "null", "value", "object", "array", "date", "time", "date-time", "uuid"};
    std::map<std::string, std::string> refRules_;
    std::map<std::string, int> suffix_;
    size_t bytes_ = 0;
    int depth_ = 0;
    std::string error_;
};

}  // namespace inferscope::grammar::schema_detail
