// The grammar an answer is generated under when tools are offered (tool_format.h): each offered
// function's call in the template's syntax, its arguments under the function's parameters schema
// (the schema's grammar, its rules renamed apart), and with tool_choice auto plain text besides.
#include <fmt/format.h>

#include "server/tool_format.h"

namespace inferscope::server {
namespace {

bool isNameChar(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
}

// The grammar with every rule name (definitions and references) prefixed: literals, character
// classes, repetition bounds and comments are copied as they are.
std::string prefixRules(std::string_view gbnf, std::string_view prefix) {
    std::string out;
    out.reserve(gbnf.size() + gbnf.size() / 4);
    size_t i = 0;
    auto copyDelimited = [&](char close) {  // from the opening character past the closing one, escapes kept
        out += gbnf[i++];
        while (i < gbnf.size() && gbnf[i] != close) {
            if (gbnf[i] == '\\' && i + 1 < gbnf.size()) out += gbnf[i++];
            out += gbnf[i++];
        }
        if (i < gbnf.size()) out += gbnf[i++];
    };
    while (i < gbnf.size()) {
        const char c = gbnf[i];
        if (c == '"') copyDelimited('"');
        else if (c == '[') copyDelimited(']');
        else if (c == '{') copyDelimited('}');
        else if (c == '#') {
            while (i < gbnf.size() && gbnf[i] != '\n') out += gbnf[i++];
        } else if (isNameChar(c)) {
            out += prefix;
            while (i < gbnf.size() && isNameChar(gbnf[i])) out += gbnf[i++];
        } else {
            out += gbnf[i++];
        }
    }
    return out;
}

struct Shape {
    const char* argumentsKey;
    std::string open, separator, close;  // around and between the calls (GBNF)
    std::string_view opener;             // tool_choice auto: text must not start with it
    bool single;                         // one call at most
};

Shape shapeOf(ToolSyntax syntax, bool parallel) {
    switch (syntax) {
        case ToolSyntax::Llama3: return {"parameters", "", "", "", "{", true};
        case ToolSyntax::Hermes: return {"arguments", R"("<tool_call>\n")", R"("\n</tool_call>\n<tool_call>\n")", R"("\n</tool_call>")", "<tool_call>", !parallel};
        case ToolSyntax::Mistral: return {"arguments", R"("[TOOL_CALLS] [")", R"(", ")", R"("]")", "[TOOL_CALLS]", !parallel};
        case ToolSyntax::Generic: return {"arguments", R"("{\"tool_calls\": [")", R"(", ")", R"("]}")", "{", !parallel};
    }
    return {"arguments", "", "", "", "{", true};
}

// Any text that does not start with `opener` (ASCII, no quote or backslash): it leaves the opener at
// its first differing character, or is a proper prefix of it. "<think>" passes "<tool_call>".
std::string textRule(std::string_view opener) {
    auto negated = [](char c) {
        const bool escape = c == ']' || c == '[' || c == '\\' || c == '-' || c == '^';
        return std::string("[^") + (escape ? "\\" : "") + c + "]";
    };
    std::string alternatives;
    for (size_t k = 0; k < opener.size(); ++k) {
        const std::string prefix = k ? "\"" + std::string(opener.substr(0, k)) + "\" " : "";
        alternatives += (k ? " | " : "") + prefix + negated(opener[k]) + " .*";
        if (k) alternatives += " | \"" + std::string(opener.substr(0, k)) + "\"";
    }
    return "text ::= (" + alternatives + ")?\n";
}

}  // namespace

std::string toolCallGbnf(ToolSyntax syntax, const ServeRequest& r) {
    const Shape shape = shapeOf(syntax, r.parallelToolCalls);
    std::string rules, call = "call ::= ";
    bool any = false;
    for (size_t i = 0; i < r.tools.size(); ++i) {
        const ToolFunction& t = r.tools[i];
        if (r.toolChoice == ToolChoice::Named && t.name != r.toolChoiceName) continue;
        const std::string prefix = fmt::format("t{}-", i);
        rules += prefixRules(t.parametersGbnf, prefix) + "\n";
        // Names are letters, digits, '_' and '-': nothing to escape in a literal.
        rules += fmt::format("call{} ::= \"{{\\\"name\\\": \\\"{}\\\", \\\"{}\\\": \" {}root \"}}\"\n", i, t.name, shape.argumentsKey, prefix);
        call += fmt::format("{}call{}", any ? " | " : "", i);
        any = true;
    }
    std::string calls = "calls ::= " + shape.open + (shape.open.empty() ? "" : " ") + "call";
    if (!shape.single) calls += " (" + shape.separator + " call)*";
    if (!shape.close.empty()) calls += " " + shape.close;
    std::string root = "root ::= calls\n";
    if (r.toolChoice == ToolChoice::Auto) root = "root ::= calls | text\n" + textRule(shape.opener);
    return root + calls + "\n" + call + "\n" + rules;
}

}  // namespace inferscope::server
