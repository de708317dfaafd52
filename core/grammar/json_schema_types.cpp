// The GBNF rules of a JSON schema's types (see json_schema.h; the converter's state in
// json_schema_convert.h): strings with a format or a length, arrays with an item schema and bounds,
// objects with their properties in declared order, required and additional members.
#include <fmt/format.h>
#include <set>
#include <vector>

#include "grammar/json_schema_convert.h"

namespace inferscope::grammar::schema_detail {

bool Converter::bound(const Json& schema, const char* key, const std::string& where, uint32_t& out, bool& present) {
    present = false;
    if (!schema.contains(key)) return true;
    const Json& v = schema[key];
    if (!v.is_number_integer() && !v.is_number_unsigned()) return err(where, fmt::format("{} must be a non-negative integer", key));
    const auto n = v.get<int64_t>();
    if (n < 0) return err(where, fmt::format("{} must be a non-negative integer", key));
    if (n > int64_t(limits_.maxBound)) return err(where, fmt::format("{} is above the limit of {}", key, limits_.maxBound));
    out = uint32_t(n);
    present = true;
    return true;
}

bool Converter::visitType(const Json& schema, const std::string& type, const std::string& where, std::string& out) {
    if (type == "object") return visitObject(schema, where, out);
    if (type == "array") return visitArray(schema, where, out);
    if (type == "string") return visitString(schema, where, out);
    if (type == "number" || type == "integer" || type == "boolean" || type == "null") {
        out = type;
        return true;
    }
    return err(where, limits_.quoteInput ? fmt::format("unknown type '{}'", type) : std::string("unknown type"));
}

bool Converter::visitString(const Json& schema, const std::string& where, std::string& out) {
    if (schema.contains("format") && schema["format"].is_string()) {
        const std::string format = schema["format"].get<std::string>();
        if (format == "date" || format == "time" || format == "date-time" || format == "uuid") {
            out = "(\"\\\"\" " + format + " \"\\\"\" space)";
            return true;
        }
        if (limits_.strict)
            return err(where, limits_.quoteInput ? fmt::format("format '{}' cannot be enforced (strict)", format)
                                                 : std::string("this format cannot be enforced (strict)"));
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

bool Converter::visitArray(const Json& schema, const std::string& where, std::string& out) {
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

bool Converter::visitObject(const Json& schema, const std::string& where, std::string& out) {
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
        size_t index = 0;
        for (const auto& [name, sub] : props.items()) {
            declared.insert(name);
            std::string value;
            const std::string at = where + "/properties/" + segment(name, index++);
            if (!visit(sub, at, value)) return false;
            const std::string kv = addRule(at + "-kv", literal(Json(name).dump()) + " space \":\" space " + value);
            (requiredNames.count(name) ? required : optional).push_back(kv);
        }
    }
    for (const std::string& name : requiredNames)
        if (!declared.count(name))
            return err(where, limits_.quoteInput ? fmt::format("required property '{}' is not in properties", name)
                                                 : std::string("required names a property that is not in properties"));
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
            for (size_t j = i + 1; j < optional.size(); ++j) {
                alt += " (\",\" space " + optional[j] + ")?";
                if (!withinLimit(where, alts.size() + alt.size())) return false;
            }
            if (!extraKv.empty()) alt += " (\",\" space " + extraKv + ")*";
            alts += (alts.empty() ? "" : " | ") + alt;
        }
        if (!extraKv.empty()) alts += (alts.empty() ? "" : " | ") + extraKv + " (\",\" space " + extraKv + ")*";
        body = "(" + alts + ")?";
    }
    out = addRule(where.empty() ? "/object" : where, "\"{\" space " + body + " \"}\" space");
    return withinLimit(where);
}

}  // namespace inferscope::grammar::schema_detail
