// Tools in an OpenAI chat request (see openai_request.h): `tools` (functions with a JSON schema of
// their parameters), `tool_choice`, `parallel_tool_calls`, and the tool parts of messages (an
// assistant's `tool_calls`, `role: "tool"` results). Every part is bounded before it is copied or
// parsed again; each function's parameters are compiled here, so a bad schema is a 400 before the
// request waits for a slot. No message repeats what the client sent.
#include <algorithm>
#include <cctype>
#include <fmt/format.h>

#include "grammar/json_schema.h"
#include "server/json_shape.h"
#include "server/json_text.h"
#include "server/openai_request_detail.h"

namespace inferscope::server {

bool ServeRequest::hasToolMessages() const {
    return std::any_of(messages.begin(), messages.end(), [](const ChatMessage& m) { return m.toolResult || !m.toolCalls.empty(); });
}

namespace request_detail {
namespace {

using nlohmann::json;
using nlohmann::ordered_json;

bool isToolName(const std::string& s) {
    if (s.empty() || s.size() > kMaxToolNameBytes) return false;
    return std::all_of(s.begin(), s.end(), [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-'; });
}

constexpr const char* kToolShape = "must be {\"type\": \"function\", \"function\": {\"name\", \"description\", \"parameters\"}}";
constexpr size_t kMaxDescriptionBytes = 16 * 1024;
constexpr size_t kMaxToolsGbnfBytes = size_t(1) << 20;  // the parameters' grammars together

// One tool: checked, its declaration read in the order written, its parameters compiled.
std::optional<ApiError> readTool(const json& t, std::string_view text, size_t i, ServeRequest& r) {
    const std::string param = fmt::format("tools[{}]", i);
    if (text.size() > kMaxToolBytes) return badParameter("tools", fmt::format("{} is larger than {} bytes", param, kMaxToolBytes));
    if (!t.is_object() || field(t, "type") != "function" || !field(t, "function").is_object())
        return badParameter("tools", fmt::format("{} {}", param, kToolShape));
    const json& f = t["function"];
    const json& name = field(f, "name");
    if (!name.is_string() || !isToolName(name.get<std::string>()))
        return badParameter("tools", fmt::format("{}.function.name must be 1 to {} letters, digits, '_' or '-'", param, kMaxToolNameBytes));
    for (const ToolFunction& other : r.tools)
        if (other.name == name.get<std::string>()) return badParameter("tools", fmt::format("{}.function.name is given twice", param));
    const json& description = field(f, "description");
    if (!description.is_null() && (!description.is_string() || description.get_ref<const std::string&>().size() > kMaxDescriptionBytes))
        return badParameter("tools", fmt::format("{}.function.description must be a string of at most {} bytes", param, kMaxDescriptionBytes));
    const json& parameters = field(f, "parameters");
    if (!parameters.is_null() && !parameters.is_object())
        return badParameter("tools", fmt::format("{}.function.parameters must be a JSON schema (an object)", param));
    bool strict = false;
    if (const json& s = field(f, "strict"); !s.is_null()) {
        if (!s.is_boolean()) return badParameter("tools", fmt::format("{}.function.strict must be true or false", param));
        strict = s.get<bool>();
    }
    // The declaration as written: the function's members in their order (bounded: at most 1024
    // members in any object, so the ordered parse stays linear enough).
    const auto fnText = memberText(text, "function");
    JsonShapeLimits shape;
    shape.maxMembers = grammar::JsonSchemaLimits{}.maxMembers;
    if (!fnText || jsonShapeError(*fnText, shape))
        return badParameter("tools", fmt::format("{} has an object with more than {} members", param, shape.maxMembers));
    const ordered_json fn = ordered_json::parse(*fnText, nullptr, false);
    if (fn.is_discarded()) return badParameter("tools", fmt::format("{} could not be read", param));
    ordered_json declared = ordered_json::object();
    for (const auto& [key, value] : fn.items())
        if (key == "name" || key == "description" || (key == "parameters" && !value.is_null())) declared[key] = value;
    ToolFunction tool;
    tool.name = name.get<std::string>();
    tool.declaration = ordered_json{{"type", "function"}, {"function", std::move(declared)}};
    grammar::JsonSchemaLimits limits;
    limits.maxTextBytes = kMaxToolBytes;
    limits.strict = strict;
    limits.quoteInput = false;
    const auto paramsText = parameters.is_null() ? std::optional<std::string_view>("{\"type\": \"object\"}") : memberText(*fnText, "parameters");
    if (!paramsText) return badParameter("tools", fmt::format("{}.function.parameters could not be read", param));
    auto gbnf = grammar::jsonSchemaToGbnf(*paramsText, limits);
    if (!gbnf) return badParameter("tools", fmt::format("{}.function.parameters: {}", param, gbnf.error().message));
    tool.parametersGbnf = std::move(*gbnf);
    r.tools.push_back(std::move(tool));
    return std::nullopt;
}

std::optional<ApiError> readToolChoice(const json& choice, ServeRequest& r) {
    constexpr const char* kChoice = "tool_choice must be none, auto, required or {\"type\": \"function\", \"function\": {\"name\"}}";
    if (choice.is_null()) {
        r.toolChoice = ToolChoice::Auto;  // OpenAI's default when tools are given
        return std::nullopt;
    }
    if (choice.is_string()) {
        const std::string& s = choice.get_ref<const std::string&>();
        if (s == "none") r.toolChoice = ToolChoice::None;
        else if (s == "auto") r.toolChoice = ToolChoice::Auto;
        else if (s == "required") r.toolChoice = ToolChoice::Required;
        else return badParameter("tool_choice", kChoice);
        return std::nullopt;
    }
    if (!choice.is_object() || field(choice, "type") != "function" || !field(choice, "function").is_object() ||
        !field(choice["function"], "name").is_string())
        return badParameter("tool_choice", kChoice);
    const std::string& name = choice["function"]["name"].get_ref<const std::string&>();
    if (std::none_of(r.tools.begin(), r.tools.end(), [&](const ToolFunction& t) { return t.name == name; }))
        return badParameter("tool_choice", "tool_choice names a function that is not in tools");
    r.toolChoice = ToolChoice::Named;
    r.toolChoiceName = name;
    return std::nullopt;
}

}  // namespace

std::optional<ApiError> readToolParts(const json& m, const std::string& param, ChatMessage& msg) {
    if (msg.toolResult) {
        const json& id = field(m, "tool_call_id");
        if (!id.is_string() || id.get_ref<const std::string&>().empty() || id.get_ref<const std::string&>().size() > kMaxToolCallIdBytes)
            return badParameter(param + ".tool_call_id", fmt::format("{}.tool_call_id must be a string of 1 to {} bytes", param, kMaxToolCallIdBytes));
        msg.toolCallId = id.get<std::string>();
        return std::nullopt;
    }
    const json& calls = field(m, "tool_calls");
    if (calls.is_null()) return std::nullopt;
    const std::string p = param + ".tool_calls";
    if (msg.role != ChatRole::Assistant) return badParameter(p, p + " is only for assistant messages");
    if (!calls.is_array() || calls.size() > kMaxToolCalls)
        return badParameter(p, fmt::format("{} must be an array of at most {} calls", p, kMaxToolCalls));
    for (size_t i = 0; i < calls.size(); ++i) {
        const json& c = calls[i];
        const std::string at = fmt::format("{}[{}]", p, i);
        if (!c.is_object() || !field(c, "function").is_object() || (!field(c, "type").is_null() && field(c, "type") != "function"))
            return badParameter(p, at + " must be {\"id\", \"type\": \"function\", \"function\": {\"name\", \"arguments\"}}");
        const json& f = c["function"];
        const json& id = field(c, "id");
        if (!id.is_null() && (!id.is_string() || id.get_ref<const std::string&>().size() > kMaxToolCallIdBytes))
            return badParameter(p, fmt::format("{}.id must be a string of at most {} bytes", at, kMaxToolCallIdBytes));
        const json& name = field(f, "name");
        if (!name.is_string() || !isToolName(name.get<std::string>()))
            return badParameter(p, fmt::format("{}.function.name must be 1 to {} letters, digits, '_' or '-'", at, kMaxToolNameBytes));
        const json& args = field(f, "arguments");
        if (!args.is_null() && !args.is_string()) return badParameter(p, at + ".function.arguments must be a string of JSON");
        msg.toolCalls.push_back(ToolCall{id.is_string() ? id.get<std::string>() : std::string(), name.get<std::string>(),
                                         args.is_string() ? args.get<std::string>() : std::string("{}")});
    }
    return std::nullopt;
}

std::optional<ApiError> readTools(const json& body, std::string_view raw, ServeRequest& r) {
    const json& tools = field(body, "tools");
    const json& choice = field(body, "tool_choice");
    if (const json& p = field(body, "parallel_tool_calls"); !p.is_null()) {
        if (!p.is_boolean()) return badParameter("parallel_tool_calls", "parallel_tool_calls must be true or false");
        r.parallelToolCalls = p.get<bool>();
    }
    if (tools.is_null() || (tools.is_array() && tools.empty())) {
        if (!choice.is_null() && choice != "none") return badParameter("tool_choice", "tool_choice other than none needs tools");
        return std::nullopt;
    }
    if (!tools.is_array() || tools.size() > kMaxTools)
        return badParameter("tools", fmt::format("tools must be an array of at most {} functions, each {}", kMaxTools, kToolShape));
    const auto text = memberText(raw, "tools");
    if (!text || text->size() > kMaxToolsBytes) return badParameter("tools", fmt::format("tools is larger than {} bytes", kMaxToolsBytes));
    const auto elements = elementTexts(*text, kMaxTools);
    if (!elements || elements->size() != tools.size()) return badParameter("tools", "tools could not be read");
    size_t gbnfBytes = 0;
    for (size_t i = 0; i < tools.size(); ++i) {
        if (auto e = readTool(tools[i], (*elements)[i], i, r)) return e;
        gbnfBytes += r.tools.back().parametersGbnf.size();
        if (gbnfBytes > kMaxToolsGbnfBytes)
            return badParameter("tools", fmt::format("the tools' parameters make a grammar larger than {} bytes", kMaxToolsGbnfBytes));
    }
    return readToolChoice(choice, r);
}

}  // namespace request_detail
}  // namespace inferscope::server
