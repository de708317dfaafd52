// Tool calls parsed out of a generated answer (tool_format.h). The answer is the model's: any
// bytes, any length the context allows. Each candidate's JSON shape is bounded before it is parsed
// (json_shape.h), and an answer that is not exactly calls in the template's syntax, of offered
// functions, is plain text. A call's arguments are kept as the model wrote them (JSON text).
#include <algorithm>

#include "server/json_shape.h"
#include "server/json_text.h"
#include "server/tool_format.h"

namespace inferscope::server {
namespace {

using nlohmann::ordered_json;

constexpr std::string_view kSpace = " \t\n\r";

std::string_view trimLeft(std::string_view s) {
    const size_t b = s.find_first_not_of(kSpace);
    return b == std::string_view::npos ? std::string_view() : s.substr(b);
}
std::string_view trimRight(std::string_view s) {
    const size_t e = s.find_last_not_of(kSpace);
    return e == std::string_view::npos ? std::string_view() : s.substr(0, e + 1);
}
std::string_view trim(std::string_view s) { return trimRight(trimLeft(s)); }

// A JSON value of bounded shape, or discarded.
ordered_json parseBounded(std::string_view text) {
    JsonShapeLimits limits;
    limits.maxMembers = 1024;  // ordered_json's insertion costs the square of an object's members
    if (text.empty() || jsonShapeError(text, limits)) return ordered_json(ordered_json::value_t::discarded);
    return ordered_json::parse(text, nullptr, false);
}

// {"name": <an offered function>, <argumentsKey>: <a value>} as a call, `text` being the object's
// JSON text: the arguments are their text as the model wrote it (what a stream sent of them).
std::optional<ToolCall> callOf(const ordered_json& o, std::string_view text, const char* argumentsKey, const std::vector<ToolFunction>& tools) {
    if (!o.is_object()) return std::nullopt;
    const auto name = o.find("name");
    if (name == o.end() || !name->is_string() || !o.contains(argumentsKey)) return std::nullopt;
    const std::string& n = name->get_ref<const std::string&>();
    if (std::none_of(tools.begin(), tools.end(), [&](const ToolFunction& t) { return t.name == n; })) return std::nullopt;
    const auto args = request_detail::memberText(text, argumentsKey);
    if (!args) return std::nullopt;
    return ToolCall{{}, n, std::string(*args)};
}
std::optional<ToolCall> callOf(std::string_view text, const char* argumentsKey, const std::vector<ToolFunction>& tools) {
    return callOf(parseBounded(text), text, argumentsKey, tools);
}

// An array of calls, `text` its JSON text.
bool callsOf(const ordered_json& a, std::string_view text, const std::vector<ToolFunction>& tools, std::vector<ToolCall>& out) {
    if (!a.is_array() || a.empty()) return false;
    const auto elements = request_detail::elementTexts(text, a.size());
    if (!elements || elements->size() != a.size()) return false;
    for (size_t i = 0; i < a.size(); ++i) {
        auto call = callOf(a[i], (*elements)[i], "arguments", tools);
        if (!call) return false;
        out.push_back(std::move(*call));
    }
    return true;
}

bool parseHermes(std::string_view text, const std::vector<ToolFunction>& tools, ParsedAnswer& out) {
    constexpr std::string_view kOpen = "<tool_call>", kClose = "</tool_call>";
    size_t at = text.find(kOpen);
    if (at == std::string_view::npos) return false;
    out.content = std::string(trimRight(text.substr(0, at)));
    while (at < text.size()) {
        if (text.substr(at, kOpen.size()) != kOpen) return false;
        const size_t close = text.find(kClose, at + kOpen.size());
        if (close == std::string_view::npos) return false;
        auto call = callOf(trim(text.substr(at + kOpen.size(), close - at - kOpen.size())), "arguments", tools);
        if (!call) return false;
        out.calls.push_back(std::move(*call));
        at = close + kClose.size();
        const size_t next = text.find_first_not_of(kSpace, at);
        at = next == std::string_view::npos ? text.size() : next;
    }
    return true;
}

bool parseMistral(std::string_view text, const std::vector<ToolFunction>& tools, ParsedAnswer& out) {
    constexpr std::string_view kOpen = "[TOOL_CALLS]";
    const size_t at = text.find(kOpen);
    if (at == std::string_view::npos) return false;
    out.content = std::string(trimRight(text.substr(0, at)));
    const std::string_view array = trim(text.substr(at + kOpen.size()));
    return callsOf(parseBounded(array), array, tools, out.calls);
}

bool parseLlama3(std::string_view text, const std::vector<ToolFunction>& tools, ParsedAnswer& out) {
    const std::string_view t = trim(text);
    if (t.empty() || t.front() != '{') return false;
    const ordered_json o = parseBounded(t);
    auto call = callOf(o, t, "parameters", tools);
    if (!call) call = callOf(o, t, "arguments", tools);  // the spelling some fine-tunes use
    if (!call) return false;
    out.calls.push_back(std::move(*call));
    return true;
}

bool parseGeneric(std::string_view text, const std::vector<ToolFunction>& tools, ParsedAnswer& out) {
    const std::string_view t = trim(text);
    if (t.empty() || t.front() != '{') return false;
    const ordered_json o = parseBounded(t);
    if (!o.is_object() || o.size() != 1 || !o.contains("tool_calls")) return false;
    const auto array = request_detail::memberText(t, "tool_calls");
    return array && callsOf(o["tool_calls"], *array, tools, out.calls);
}

}  // namespace

ParsedAnswer parseToolAnswer(ToolSyntax syntax, std::string_view text, const std::vector<ToolFunction>& tools) {
    ParsedAnswer out;
    bool ok = false;
    if (!tools.empty()) {
        switch (syntax) {
            case ToolSyntax::Llama3: ok = parseLlama3(text, tools, out); break;
            case ToolSyntax::Hermes: ok = parseHermes(text, tools, out); break;
            case ToolSyntax::Mistral: ok = parseMistral(text, tools, out); break;
            case ToolSyntax::Generic: ok = parseGeneric(text, tools, out); break;
        }
    }
    if (!ok) return ParsedAnswer{std::string(text), {}};
    return out;
}

size_t toolSafeContentLength(ToolSyntax syntax, std::string_view text) {
    if (syntax == ToolSyntax::Llama3 || syntax == ToolSyntax::Generic) {  // a call is the whole answer
        const std::string_view t = trimLeft(text);
        return t.empty() || t.front() == '{' ? 0 : text.size();
    }
    const std::string_view open = syntax == ToolSyntax::Hermes ? "<tool_call>" : "[TOOL_CALLS]";
    if (const size_t at = text.find(open); at != std::string_view::npos) return trimRight(text.substr(0, at)).size();
    // Held back: a tail that may become the opener, and white space that may precede it.
    size_t safe = text.size();
    for (size_t k = std::min(open.size() - 1, text.size()); k > 0; --k)
        if (text.substr(text.size() - k) == open.substr(0, k)) {
            safe = text.size() - k;
            break;
        }
    return trimRight(text.substr(0, safe)).size();
}

}  // namespace inferscope::server
