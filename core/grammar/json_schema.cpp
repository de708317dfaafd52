// JSON Schema -> GBNF (see json_schema.h). Each schema node becomes a rule named after its
// location; the primitives are shared rules; $defs become one rule each, generated when first
// referenced (so recursive schemas are recursive rules). This file holds the entry points, the
// rules' names and the grammar's size, and the walk over a schema's keywords ($ref, const, enum,
// anyOf, type); the rules of strings, arrays and objects are in json_schema_types.cpp.
#include "grammar/json_schema.h"

#include <fmt/format.h>
#include <cctype>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <vector>

#include "common/json_shape.h"
#include "grammar/gbnf.h"
#include "grammar/json_schema_convert.h"

namespace inferscope::grammar {

namespace schema_detail {
namespace {

constexpr std::string_view kPrimitives = R"(space ::= | " " | "\n" [ \t]{0,20}
char ::= [^"\\\x7F\x00-\x1F] | "\\" (["\\/bfnrt] | "u" [0-9a-fA-F]{4})
string ::= "\"" char* "\"" space
integral-part ::= [0] | [1-9] [0-9]{0,15}
number ::= "-"? integral-part ("." [0-9]+)? ([eE] [-+]? [0-9]+)? space
integer ::= "-"? integral-part space
boolean ::= ("true" | "false") space
null ::= "null" space
value ::= object | array | string | number | boolean | null
object ::= "{" space (string ":" space value ("," space string ":" space value)*)? "}" space
array ::= "[" space (value ("," space value)*)? "]" space
date ::= [0-9]{4} "-" ("0" [1-9] | "1" [0-2]) "-" ("0" [1-9] | [12] [0-9] | "3" [01])
time ::= ([01] [0-9] | "2" [0-3]) ":" [0-5] [0-9] ":" [0-5] [0-9] ("." [0-9]{1,9})? ("Z" | [+-] ([01] [0-9] | "2" [0-3]) ":" [0-5] [0-9])
date-time ::= date "T" time
uuid ::= [0-9a-fA-F]{8} "-" [0-9a-fA-F]{4} "-" [0-9a-fA-F]{4} "-" [0-9a-fA-F]{4} "-" [0-9a-fA-F]{12}
)";

}  // namespace

// A GBNF literal for these bytes.
std::string literal(std::string_view s) {
    std::string out = "\"";
    for (unsigned char c : s) {
        if (c == '"' || c == '\\') {
            out += '\\';
            out += char(c);
        } else if (c == '\n') {
            out += "\\n";
        } else if (c == '\r') {
            out += "\\r";
        } else if (c == '\t') {
            out += "\\t";
        } else if (c < 0x20 || c == 0x7F) {
            out += fmt::format("\\x{:02X}", c);
        } else {
            out += char(c);
        }
    }
    return out + "\"";
}

Result<std::string> Converter::run(const Json& schema) {
    root_ = &schema;
    std::string body;
    if (!visit(schema, "", body)) return fail(ErrorKind::InvalidArgument, error_);
    std::string out = "root ::= " + body + "\n";
    for (const auto& [name, rule] : rules_) out += name + " ::= " + rule + "\n";
    out += kPrimitives;
    if (out.size() > limits_.maxGrammarBytes)
        return fail(ErrorKind::InvalidArgument, fmt::format("the schema's grammar is larger than {} bytes", limits_.maxGrammarBytes));
    return out;
}

// ---- rules and limits ------------------------------------------------------------------------

bool Converter::err(const std::string& where, std::string_view what) {
    if (error_.empty()) error_ = fmt::format("JSON schema at {}: {}", where.empty() ? "/" : where, what);
    return false;
}

std::string Converter::ruleName(const std::string& where) {
    std::string name = "s";
    for (char c : where) name += (std::isalnum(static_cast<unsigned char>(c)) ? char(std::tolower(c)) : '-');
    // The next free suffix per name: many locations that read alike ("a b", "a-b", ...) cost
    // one look-up each, not one per earlier namesake.
    std::string unique = name;
    int& next = suffix_[name];
    if (next == 0) next = 2;
    while (rules_.count(unique) || reserved_.count(unique)) unique = fmt::format("{}-{}", name, next++);
    reserved_.insert(unique);
    return unique;
}

std::string Converter::addRule(const std::string& where, std::string body) {
    std::string name = ruleName(where);
    bytes_ += name.size() + body.size() + 6;
    rules_[name] = std::move(body);
    return name;
}

bool Converter::withinLimit(const std::string& where, size_t more) {
    if (bytes_ + more <= limits_.maxGrammarBytes) return true;
    return err(where, fmt::format("the schema's grammar is larger than {} bytes", limits_.maxGrammarBytes));
}

std::string Converter::segment(const std::string& name, size_t index) const {
    return limits_.quoteInput ? name : fmt::format("#{}", index);
}

// ---- the walk --------------------------------------------------------------------------------

bool Converter::visit(const Json& schema, const std::string& where, std::string& out) {
    if (++depth_ > limits_.maxDepth) return err(where, "schemas nested too deep");
    const bool ok = visitInner(schema, where, out);
    --depth_;
    return ok;
}

bool Converter::visitInner(const Json& schema, const std::string& where, std::string& out) {
    if (schema.is_boolean()) {
        if (!schema.get<bool>()) return err(where, "the schema `false` admits nothing");
        out = "value";
        return true;
    }
    if (!schema.is_object()) return err(where, "a schema must be an object or a boolean");
    static const std::set<std::string> refused{"pattern", "allOf", "not", "if", "then", "else", "patternProperties",
                                               "prefixItems", "contains", "dependentRequired", "dependentSchemas",
                                               "propertyNames", "unevaluatedProperties", "unevaluatedItems",
                                               "minProperties", "maxProperties", "uniqueItems", "$dynamicRef"};
    for (const auto& [key, v] : schema.items())
        if (refused.count(key)) return err(where, fmt::format("'{}' is not supported", key));
    if (limits_.strict) {
        static const std::set<std::string> unenforced{"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum",
                                                      "multipleOf", "oneOf"};
        for (const auto& [key, v] : schema.items())
            if (unenforced.count(key)) return err(where, fmt::format("'{}' cannot be enforced (strict)", key));
    }
    if (schema.contains("$ref")) return visitRef(schema["$ref"], where, out);
    if (schema.contains("const")) {
        out = "(" + literal(schema["const"].dump()) + " space)";
        return true;
    }
    if (schema.contains("enum")) {
        const Json& values = schema["enum"];
        if (!values.is_array() || values.empty()) return err(where, "enum must be a non-empty array");
        std::string alts;
        for (const Json& v : values) alts += (alts.empty() ? "" : " | ") + literal(v.dump());
        out = "(" + alts + ") space";
        return true;
    }
    for (const char* key : {"anyOf", "oneOf"}) {
        if (!schema.contains(key)) continue;
        const Json& options = schema[key];
        if (!options.is_array() || options.empty()) return err(where, fmt::format("{} must be a non-empty array", key));
        std::string alts;
        for (size_t i = 0; i < options.size(); ++i) {
            std::string alt;
            if (!visit(options[i], fmt::format("{}/{}/{}", where, key, i), alt)) return false;
            alts += (alts.empty() ? "" : " | ") + alt;
        }
        out = addRule(where + "/" + key, alts);
        return true;
    }
    if (!schema.contains("type")) {
        if (schema.contains("properties")) return visitObject(schema, where, out);
        if (schema.contains("items")) return visitArray(schema, where, out);
        out = "value";
        return true;
    }
    const Json& type = schema["type"];
    if (type.is_array()) {
        if (type.empty()) return err(where, "type must not be an empty array");
        std::string alts;
        for (const Json& t : type) {
            if (!t.is_string()) return err(where, "type must be a string or an array of strings");
            std::string alt;
            if (!visitType(schema, t.get<std::string>(), where, alt)) return false;
            alts += (alts.empty() ? "" : " | ") + alt;
        }
        out = "(" + alts + ")";
        return true;
    }
    if (!type.is_string()) return err(where, "type must be a string or an array of strings");
    return visitType(schema, type.get<std::string>(), where, out);
}

bool Converter::visitRef(const Json& ref, const std::string& where, std::string& out) {
    if (!ref.is_string()) return err(where, "$ref must be a string");
    const std::string target = ref.get<std::string>();
    auto known = refRules_.find(target);
    if (known != refRules_.end()) {
        out = known->second;
        return true;
    }
    const Json* node = nullptr;
    std::string at;  // the definition's location
    if (target == "#") {
        node = root_;
    } else {
        for (const char* prefix : {"#/$defs/", "#/definitions/"}) {
            if (!target.starts_with(prefix)) continue;
            const std::string name = target.substr(std::string_view(prefix).size());
            const char* section = prefix[2] == '$' ? "$defs" : "definitions";
            if (!root_->contains(section) || !(*root_)[section].is_object()) continue;
            size_t index = 0;
            for (const auto& [key, def] : (*root_)[section].items()) {
                if (key == name) {
                    node = &def;
                    at = fmt::format("/{}/{}", section, segment(name, index));
                    break;
                }
                ++index;
            }
        }
    }
    if (!node)
        return err(where, limits_.quoteInput
                              ? fmt::format("$ref '{}' is not '#', '#/$defs/NAME' or '#/definitions/NAME' of this schema", target)
                              : std::string("$ref is not '#', '#/$defs/NAME' or '#/definitions/NAME' of this schema"));
    // The rule's name is taken before its body is built, so a recursive reference finds it.
    const std::string name = ruleName("/ref" + at);
    refRules_[target] = name;
    std::string body;
    if (!visit(*node, at, body)) return false;
    rules_[name] = body;
    out = name;
    return true;
}

}  // namespace schema_detail

using schema_detail::Converter;
using schema_detail::Json;
using schema_detail::kPrimitives;

Result<std::string> jsonSchemaToGbnf(std::string_view schemaText, const JsonSchemaLimits& limits) {
    if (schemaText.size() > limits.maxTextBytes)
        return fail(ErrorKind::InvalidArgument, fmt::format("JSON schema of {} bytes, more than the limit of {}", schemaText.size(), limits.maxTextBytes));
    if (auto shape = jsonShapeError(schemaText, JsonShapeLimits{limits.maxDepth, limits.maxValues, limits.maxMembers}))
    {
        std::string why = *shape;
        if (why.starts_with("the request body")) why = "the schema" + why.substr(16);
        return fail(ErrorKind::InvalidArgument, "JSON schema: " + why);
    }
    Json schema = Json::parse(schemaText, nullptr, false);
    if (schema.is_discarded()) return fail(ErrorKind::InvalidArgument, "JSON schema: not valid JSON");
    auto text = Converter(limits).run(schema);
    if (!text) return text;
    // What we produce must parse (a recursive $ref that never consumes is refused here).
    GbnfLimits gbnf;
    gbnf.quoteInput = limits.quoteInput;
    if (auto g = parseGbnf(*text, gbnf); !g) return fail(ErrorKind::InvalidArgument, "JSON schema: " + g.error().message);
    return text;
}

std::string jsonObjectGbnf() { return "root ::= object\n" + std::string(kPrimitives); }

std::string jsonValueGbnf() { return "root ::= value\n" + std::string(kPrimitives); }

}  // namespace inferscope::grammar
