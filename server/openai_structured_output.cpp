// Structured output in an OpenAI request (see openai_request.h): `response_format` (OpenAI's
// json_object and json_schema), llama.cpp's `grammar` (GBNF text) and `json_schema` (a schema
// alone), at most one of them, compiled here to the request's grammar so that a bad one is a 400
// before the request waits for a slot. Nothing of the client's text is repeated in a message.
#include <algorithm>
#include <cctype>
#include <fmt/format.h>

#include "grammar/gbnf.h"
#include "grammar/json_schema.h"
#include "server/json_text.h"
#include "server/openai_request_detail.h"

namespace inferscope::server::request_detail {
namespace {

using nlohmann::json;

std::optional<ApiError> compileGbnf(std::string_view text, const char* param, ServeRequest& r) {
    grammar::GbnfLimits limits;
    limits.maxTextBytes = std::max(kMaxGrammarBytes, grammar::JsonSchemaLimits{}.maxGrammarBytes);
    limits.quoteInput = false;  // the parser's words, the line and the column; nothing of the text
    auto g = grammar::parseGbnf(text, limits);
    if (!g) return badParameter(param, g.error().message);
    r.grammar = std::make_shared<const grammar::Grammar>(std::move(*g));
    return std::nullopt;
}

// A schema as the body holds it: `path` leads from the body to it.
std::optional<ApiError> compileSchema(std::string_view body, std::initializer_list<const char*> path, bool strict,
                                      const char* param, ServeRequest& r) {
    std::optional<std::string_view> node = body;
    for (const char* key : path)
        if (node) node = memberText(*node, key);
    if (!node) return badParameter(param, "the schema could not be read");
    const std::string_view text = *node;
    if (text.size() > kMaxGrammarBytes)
        return badParameter(param, fmt::format("{} is larger than {} bytes", param, kMaxGrammarBytes));
    grammar::JsonSchemaLimits limits;
    limits.maxTextBytes = kMaxGrammarBytes;
    limits.strict = strict;
    limits.quoteInput = false;  // locations by position ("/properties/#2"), nothing of the schema repeated
    auto gbnf = grammar::jsonSchemaToGbnf(text, limits);
    if (!gbnf) return badParameter(param, gbnf.error().message);
    return compileGbnf(*gbnf, param, r);
}

bool isSchemaName(const std::string& s) {
    if (s.empty() || s.size() > kMaxSchemaNameBytes) return false;
    for (char c : s)
        if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-') return false;
    return true;
}

}  // namespace

std::optional<ApiError> readStructuredOutput(const json& body, std::string_view raw, ServeRequest& r) {
    const json& format = field(body, "response_format");
    const json& gbnf = field(body, "grammar");
    const json& schema = field(body, "json_schema");
    bool formatAsks = false;
    if (!format.is_null()) {
        if (!format.is_object() || !field(format, "type").is_string())
            return badParameter("response_format", "response_format must be an object with a type: text, json_object or json_schema");
        const std::string type = format["type"].get<std::string>();
        if (type == "json_object" || type == "json_schema") formatAsks = true;
        else if (type != "text") return badParameter("response_format", "response_format's type must be text, json_object or json_schema");
    }
    const bool gbnfAsks = !gbnf.is_null() && !(gbnf.is_string() && gbnf.get<std::string>().empty());
    if (int(formatAsks) + int(gbnfAsks) + int(!schema.is_null()) > 1)
        return badParameter(formatAsks ? "response_format" : "grammar", "give at most one of response_format, grammar and json_schema");
    if (gbnfAsks) {
        if (!gbnf.is_string()) return badParameter("grammar", "grammar must be a string of GBNF rules");
        if (gbnf.get_ref<const std::string&>().size() > kMaxGrammarBytes)
            return badParameter("grammar", fmt::format("grammar is larger than {} bytes", kMaxGrammarBytes));
        r.format = OutputFormat::Grammar;
        return compileGbnf(gbnf.get_ref<const std::string&>(), "grammar", r);
    }
    if (!schema.is_null()) {
        if (!schema.is_object() && !schema.is_boolean()) return badParameter("json_schema", "json_schema must be a JSON schema (an object)");
        r.format = OutputFormat::JsonSchema;
        return compileSchema(raw, {"json_schema"}, false, "json_schema", r);
    }
    if (!formatAsks) return std::nullopt;
    if (format["type"] == "json_object") {
        r.format = OutputFormat::JsonObject;
        return compileGbnf(grammar::jsonObjectGbnf(), "response_format", r);
    }
    const json& spec = field(format, "json_schema");
    if (!spec.is_object())
        return badParameter("response_format", "response_format.json_schema must be an object with name, schema and strict");
    const json& name = field(spec, "name");
    if (!name.is_null() && (!name.is_string() || !isSchemaName(name.get<std::string>())))
        return badParameter("response_format", fmt::format("response_format.json_schema.name must be 1 to {} letters, digits, '_' or '-'",
                                                           kMaxSchemaNameBytes));
    bool strict = false;
    if (const json& st = field(spec, "strict"); !st.is_null()) {
        if (!st.is_boolean()) return badParameter("response_format", "response_format.json_schema.strict must be true or false");
        strict = st.get<bool>();
    }
    r.format = OutputFormat::JsonSchema;
    const json& s = field(spec, "schema");
    if (s.is_null()) return compileGbnf(grammar::jsonObjectGbnf(), "response_format", r);  // no schema: any object
    if (!s.is_object() && !s.is_boolean())
        return badParameter("response_format", "response_format.json_schema.schema must be a JSON schema (an object)");
    return compileSchema(raw, {"response_format", "json_schema", "schema"}, strict, "response_format", r);
}

}  // namespace inferscope::server::request_detail
