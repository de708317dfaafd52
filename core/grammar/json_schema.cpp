// JSON Schema -> GBNF (see json_schema.h). Each schema node becomes a rule named after its
// location; the primitives are shared rules; $defs become one rule each, generated when first
// referenced (so recursive schemas are recursive rules).
#include "grammar/json_schema.h"

#include <fmt/format.h>
#include <cctype>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <vector>

#include "common/json_shape.h"
#include "grammar/gbnf.h"

namespace inferscope::grammar {

namespace {

using Json = nlohmann::ordered_json;

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

class Converter {
public:
    explicit Converter(const JsonSchemaLimits& limits) : limits_(limits) {}

    Result<std::string> run(const Json& schema) {
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

private:
    bool err(const std::string& where, std::string_view what) {
        if (error_.empty()) error_ = fmt::format("JSON schema at {}: {}", where.empty() ? "/" : where, what);
        return false;
    }

    std::string ruleName(const std::string& where) {
        std::string name = "s";
        for (char c : where) name += (std::isalnum(static_cast<unsigned char>(c)) ? char(std::tolower(c)) : '-');
        std::string unique = name;
        for (int i = 2; rules_.count(unique) || reserved_.count(unique); ++i) unique = fmt::format("{}-{}", name, i);
        reserved_.insert(unique);
        return unique;
    }
    // A new rule for `body`; returns its name.
    std::string addRule(const std::string& where, std::string body) {
        std::string name = ruleName(where);
        rules_[name] = std::move(body);
        return name;
    }

    bool bound(const Json& schema, const char* key, const std::string& where, uint32_t& out, bool& present) {
        present = false;
        if (!schema.contains(key)) return true;
        const Json& v = schema[key];
        if (!v.is_number_integer() && !v.is_number_unsigned()) return err(where, fmt::format("{} must be a non-negative integer", key));
        const auto n = v.get<int64_t>();
        if (n < 0) return err(where, fmt::format("{} must be a non-negative integer", key));
        if (n > int64_t(limits_.maxBound)) return err(where, fmt::format("{} {} is above the limit of {}", key, n, limits_.maxBound));
        out = uint32_t(n);
        present = true;
        return true;
    }

    bool visit(const Json& schema, const std::string& where, std::string& out) {
        if (++depth_ > limits_.maxDepth) return err(where, "schemas nested too deep");
        const bool ok = visitInner(schema, where, out);
        --depth_;
        return ok;
    }

    bool visitInner(const Json& schema, const std::string& where, std::string& out) {
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

    bool visitType(const Json& schema, const std::string& type, const std::string& where, std::string& out) {
        if (type == "object") return visitObject(schema, where, out);
        if (type == "array") return visitArray(schema, where, out);
        if (type == "string") return visitString(schema, where, out);
        if (type == "number" || type == "integer" || type == "boolean" || type == "null") {
            out = type;
            return true;
        }
        return err(where, fmt::format("unknown type '{}'", type));
    }

    bool visitString(const Json& schema, const std::string& where, std::string& out) {
        if (schema.contains("format") && schema["format"].is_string()) {
            const std::string format = schema["format"].get<std::string>();
            if (format == "date" || format == "time" || format == "date-time" || format == "uuid") {
                out = "(\"\\\"\" " + format + " \"\\\"\" space)";
                return true;
            }
        }
        uint32_t min = 0, max = 0;
        bool hasMin = false, hasMax = false;
        if (!bound(schema, "minLength", where, min, hasMin) || !bound(schema, "maxLength", where, max, hasMax)) return false;
        if (!hasMin && !hasMax) {
            out = "string";
            return true;
        }
        if (hasMax && max < min) return err(where, "maxLength is below minLength");
        out = hasMax ? fmt::format("(\"\\\"\" char{{{},{}}} \"\\\"\" space)", min, max)
                     : fmt::format("(\"\\\"\" char{{{},}} \"\\\"\" space)", min);
        return true;
    }

    bool visitArray(const Json& schema, const std::string& where, std::string& out) {
        std::string item = "value";
        if (schema.contains("items") && !visit(schema["items"], where + "/items", item)) return false;
        uint32_t min = 0, max = 0;
        bool hasMin = false, hasMax = false;
        if (!bound(schema, "minItems", where, min, hasMin) || !bound(schema, "maxItems", where, max, hasMax)) return false;
        if (hasMax && max < min) return err(where, "maxItems is below minItems");
        const std::string itemRule = addRule(where + "/item", item);
        std::string list;
        if (hasMax && max == 0) {
            list = "";
        } else {
            const uint32_t restMin = min > 0 ? min - 1 : 0;
            const std::string rest = hasMax ? fmt::format("(\",\" space {}){{{},{}}}", itemRule, restMin, max - 1)
                                            : fmt::format("(\",\" space {}){{{},}}", itemRule, restMin);
            list = min > 0 ? itemRule + " " + rest : "(" + itemRule + " " + rest + ")?";
        }
        out = addRule(where.empty() ? "/array" : where, "\"[\" space " + list + " \"]\" space");
        return true;
    }

    bool visitObject(const Json& schema, const std::string& where, std::string& out) {
        std::vector<std::string> required, optional;
        std::set<std::string> requiredNames;
        if (schema.contains("required")) {
            const Json& r = schema["required"];
            if (!r.is_array()) return err(where, "required must be an array of property names");
            for (const Json& name : r) {
                if (!name.is_string()) return err(where, "required must be an array of property names");
                requiredNames.insert(name.get<std::string>());
            }
        }
        std::set<std::string> declared;
        if (schema.contains("properties")) {
            const Json& props = schema["properties"];
            if (!props.is_object()) return err(where, "properties must be an object");
            for (const auto& [name, sub] : props.items()) {
                declared.insert(name);
                std::string value;
                const std::string at = where + "/properties/" + name;
                if (!visit(sub, at, value)) return false;
                const std::string kv = addRule(at + "-kv", literal(Json(name).dump()) + " space \":\" space " + value);
                (requiredNames.count(name) ? required : optional).push_back(kv);
            }
        }
        for (const std::string& name : requiredNames)
            if (!declared.count(name)) return err(where, fmt::format("required property '{}' is not in properties", name));
        // Extra members: anything (absent or true), a schema's values, or none (false).
        std::string extra;
        if (schema.contains("additionalProperties")) {
            const Json& a = schema["additionalProperties"];
            if (a.is_boolean()) {
                if (a.get<bool>()) extra = "value";
            } else {
                if (!visit(a, where + "/additionalProperties", extra)) return false;
            }
        } else {
            extra = "value";
        }
        std::string extraKv;
        if (!extra.empty()) extraKv = addRule(where + "/additional-kv", "string \":\" space " + extra);

        std::string body;
        if (!required.empty()) {
            body = required[0];
            for (size_t i = 1; i < required.size(); ++i) body += " \",\" space " + required[i];
            for (const std::string& o : optional) body += " (\",\" space " + o + ")?";
            if (!extraKv.empty()) body += " (\",\" space " + extraKv + ")*";
        } else if (!optional.empty() || !extraKv.empty()) {
            std::string alts;
            for (size_t i = 0; i < optional.size(); ++i) {
                std::string alt = optional[i];
                for (size_t j = i + 1; j < optional.size(); ++j) alt += " (\",\" space " + optional[j] + ")?";
                if (!extraKv.empty()) alt += " (\",\" space " + extraKv + ")*";
                alts += (alts.empty() ? "" : " | ") + alt;
            }
            if (!extraKv.empty()) alts += (alts.empty() ? "" : " | ") + extraKv + " (\",\" space " + extraKv + ")*";
            body = "(" + alts + ")?";
        }
        out = addRule(where.empty() ? "/object" : where, "\"{\" space " + body + " \"}\" space");
        return true;
    }

    bool visitRef(const Json& ref, const std::string& where, std::string& out) {
        if (!ref.is_string()) return err(where, "$ref must be a string");
        const std::string target = ref.get<std::string>();
        auto known = refRules_.find(target);
        if (known != refRules_.end()) {
            out = known->second;
            return true;
        }
        const Json* node = nullptr;
        if (target == "#") {
            node = root_;
        } else {
            for (const char* prefix : {"#/$defs/", "#/definitions/"}) {
                if (!target.starts_with(prefix)) continue;
                const std::string name = target.substr(std::string_view(prefix).size());
                const char* section = prefix[2] == '$' ? "$defs" : "definitions";
                if (root_->contains(section) && (*root_)[section].is_object() && (*root_)[section].contains(name))
                    node = &(*root_)[section][name];
            }
        }
        if (!node) return err(where, fmt::format("$ref '{}' is not '#', '#/$defs/NAME' or '#/definitions/NAME' of this schema", target));
        // The rule's name is taken before its body is built, so a recursive reference finds it.
        const std::string name = ruleName("/ref" + target.substr(1));
        refRules_[target] = name;
        std::string body;
        if (!visit(*node, target.substr(1), body)) return false;
        rules_[name] = body;
        out = name;
        return true;
    }

    JsonSchemaLimits limits_;
    const Json* root_ = nullptr;
    std::map<std::string, std::string> rules_;
    std::set<std::string> reserved_{"root", "space", "char", "string", "integral-part", "number", "integer", "boolean",
                                    "null", "value", "object", "array", "date", "time", "date-time", "uuid"};
    std::map<std::string, std::string> refRules_;
    int depth_ = 0;
    std::string error_;
};

}  // namespace

Result<std::string> jsonSchemaToGbnf(std::string_view schemaText, const JsonSchemaLimits& limits) {
    if (schemaText.size() > limits.maxTextBytes)
        return fail(ErrorKind::InvalidArgument, fmt::format("JSON schema of {} bytes, more than the limit of {}", schemaText.size(), limits.maxTextBytes));
    if (auto shape = jsonShapeError(schemaText, JsonShapeLimits{limits.maxDepth, limits.maxValues}))
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
    if (auto g = parseGbnf(*text); !g) return fail(ErrorKind::InvalidArgument, "JSON schema: " + g.error().message);
    return text;
}

std::string jsonObjectGbnf() { return "root ::= object\n" + std::string(kPrimitives); }

std::string jsonValueGbnf() { return "root ::= value\n" + std::string(kPrimitives); }

}  // namespace inferscope::grammar
