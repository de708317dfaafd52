// Tools, calls and results rendered into the prompt as each template family's own template does
// (tool_format.h; docs/SERVING.md). The functions are shown as the client declared them, members
// in their order, written as Python's json.dumps writes them (the templates' `tojson`).
#include <fmt/format.h>

#include "engine/prompt_builder.h"
#include "server/tool_format.h"

namespace inferscope::server {
namespace {

using nlohmann::ordered_json;

void dumpPython(const ordered_json& v, int indent, int level, std::string& out) {
    const bool nested = v.is_object() || v.is_array();
    if (!nested || v.empty()) {
        out += v.dump(-1, ' ', false, ordered_json::error_handler_t::replace);
        return;
    }
    const std::string pad = indent > 0 ? std::string(size_t((level + 1) * indent), ' ') : std::string();
    out += v.is_object() ? '{' : '[';
    bool firstItem = true;
    for (auto it = v.begin(); it != v.end(); ++it) {
        if (!firstItem) out += indent > 0 ? "," : ", ";
        firstItem = false;
        if (indent > 0) out += "\n" + pad;
        if (v.is_object()) out += ordered_json(it.key()).dump(-1, ' ', false, ordered_json::error_handler_t::replace) + ": ";
        dumpPython(*it, indent, level + 1, out);
    }
    if (indent > 0) out += "\n" + std::string(size_t(level * indent), ' ');
    out += v.is_object() ? '}' : ']';
}

// A call's arguments as the template shows them: the JSON value in Python's spelling, or the
// client's text as it is when it is not JSON.
std::string argumentsText(const std::string& arguments) {
    const ordered_json parsed = ordered_json::parse(arguments, nullptr, false);  // bounded: part of the checked body
    return parsed.is_discarded() ? arguments : pythonJson(parsed);
}

std::string trimmed(std::string_view s) {
    constexpr std::string_view kSpace = " \t\n\r\f\v";
    const size_t begin = s.find_first_not_of(kSpace);
    if (begin == std::string_view::npos) return {};
    return std::string(s.substr(begin, s.find_last_not_of(kSpace) - begin + 1));
}

std::string callObject(const ToolCall& c, const char* argumentsKey) {
    return fmt::format("{{\"name\": \"{}\", \"{}\": {}}}", c.name, argumentsKey, argumentsText(c.arguments));
}

struct Conversation {
    std::string system;
    std::vector<const ChatMessage*> turns;  // all but system messages
    bool offer = false;                     // tools shown to the model
};

Conversation split(const ServeRequest& r) {
    Conversation c;
    for (const ChatMessage& m : r.messages) {
        if (m.role == ChatRole::System && !m.toolResult) c.system += (c.system.empty() ? "" : "\n\n") + m.content;
        else c.turns.push_back(&m);
    }
    c.offer = !r.tools.empty() && r.toolChoice != ToolChoice::None;
    return c;
}

bool continues(const ServeRequest& r, size_t i, size_t n) { return r.continueFinalMessage && i + 1 == n; }

// Llama 3.1 / 3.2: tools in the first user message, results in an "ipython" turn.
std::string llama3(const ServeRequest& r, const Conversation& c) {
    const std::string head = "<|start_header_id|>", tail = "<|end_header_id|>\n\n", eot = "<|eot_id|>";
    std::string out = head + "system" + tail + (c.offer ? "Environment: ipython\n" : "") +
                      "Cutting Knowledge Date: December 2023\nToday Date: 26 Jul 2024\n\n" + trimmed(c.system) + eot;
    size_t from = 0;
    if (c.offer) {
        std::string tools;
        for (const ToolFunction& t : r.tools) tools += pythonJson(t.declaration, 4) + "\n\n";
        const bool userFirst = !c.turns.empty() && c.turns[0]->role == ChatRole::User && !c.turns[0]->toolResult;
        out += head + "user" + tail +
               "Given the following functions, please respond with a JSON for a function call with its proper arguments that best answers "
               "the given prompt.\n\nRespond in the format {\"name\": function name, \"parameters\": dictionary of argument name and its "
               "value}.Do not use variables.\n\n" +
               tools + (userFirst ? trimmed(c.turns[0]->content) : std::string()) + eot;
        from = userFirst ? 1 : 0;
    }
    for (size_t i = from; i < c.turns.size(); ++i) {
        const ChatMessage& m = *c.turns[i];
        const std::string end = continues(r, i, c.turns.size()) ? "" : eot;
        if (m.toolResult) {
            out += head + "ipython" + tail + m.content + eot;
        } else if (m.role == ChatRole::User) {
            out += head + "user" + tail + trimmed(m.content) + eot;
        } else if (!m.toolCalls.empty()) {
            for (const ToolCall& call : m.toolCalls) out += head + "assistant" + tail + callObject(call, "parameters") + eot;
        } else {
            out += head + "assistant" + tail + (end.empty() ? m.content : trimmed(m.content)) + end;
        }
    }
    if (!r.continueFinalMessage) out += head + "assistant" + tail;
    return out;
}

// Qwen 2.5 / Qwen 3 (ChatML): tools in the system message, calls in <tool_call>, results in a
// user turn of <tool_response>s.
std::string hermes(const ServeRequest& r, const Conversation& c) {
    std::string out;
    if (c.offer) {
        out += "<|im_start|>system\n" + (c.system.empty() ? std::string() : c.system + "\n\n") +
               "# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
               "You are provided with function signatures within <tools></tools> XML tags:\n<tools>";
        for (const ToolFunction& t : r.tools) out += "\n" + pythonJson(t.declaration);
        out += "\n</tools>\n\nFor each function call, return a json object with function name and arguments within "
               "<tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": <function-name>, \"arguments\": <args-json-object>}\n"
               "</tool_call><|im_end|>\n";
    } else if (!c.system.empty()) {
        out += "<|im_start|>system\n" + c.system + "<|im_end|>\n";
    }
    for (size_t i = 0; i < c.turns.size(); ++i) {
        const ChatMessage& m = *c.turns[i];
        if (m.toolResult) {
            if (i == 0 || !c.turns[i - 1]->toolResult) out += "<|im_start|>user";
            out += "\n<tool_response>\n" + m.content + "\n</tool_response>";
            if (i + 1 == c.turns.size() || !c.turns[i + 1]->toolResult) out += "<|im_end|>\n";
        } else if (m.role == ChatRole::User) {
            out += "<|im_start|>user\n" + m.content + "<|im_end|>\n";
        } else {
            std::string text = m.content;
            for (const ToolCall& call : m.toolCalls)
                text += (text.empty() ? "" : "\n") + std::string("<tool_call>\n") + callObject(call, "arguments") + "\n</tool_call>";
            out += "<|im_start|>assistant\n" + text + (continues(r, i, c.turns.size()) ? "" : "<|im_end|>\n");
        }
    }
    if (!r.continueFinalMessage) out += "<|im_start|>assistant\n";
    return out;
}

// Mistral (v0.3 spelling): [AVAILABLE_TOOLS] before the last user message, which carries the
// system prompt; calls after [TOOL_CALLS], results in [TOOL_RESULTS].
std::string mistral(const ServeRequest& r, const Conversation& c) {
    size_t lastUser = c.turns.size();
    for (size_t i = 0; i < c.turns.size(); ++i)
        if (c.turns[i]->role == ChatRole::User && !c.turns[i]->toolResult) lastUser = i;
    std::string out = "<s>";
    for (size_t i = 0; i < c.turns.size(); ++i) {
        const ChatMessage& m = *c.turns[i];
        if (m.toolResult) {
            out += "[TOOL_RESULTS] {\"content\": " + m.content + ", \"call_id\": " + ordered_json(m.toolCallId).dump() + "}[/TOOL_RESULTS]";
        } else if (m.role == ChatRole::User) {
            if (i == lastUser && c.offer) {
                out += "[AVAILABLE_TOOLS] [";
                for (size_t t = 0; t < r.tools.size(); ++t) out += (t ? ", " : "") + pythonJson(r.tools[t].declaration);
                out += "][/AVAILABLE_TOOLS]";
            }
            out += "[INST] " + (i == lastUser && !c.system.empty() ? c.system + "\n\n" : std::string()) + m.content + " [/INST]";
        } else {
            out += m.content;
            if (!m.toolCalls.empty()) {
                out += "[TOOL_CALLS] [";
                for (size_t k = 0; k < m.toolCalls.size(); ++k) {
                    const ToolCall& call = m.toolCalls[k];
                    std::string object = callObject(call, "arguments");
                    if (!call.id.empty()) object.insert(object.size() - 1, ", \"id\": " + ordered_json(call.id).dump());
                    out += (k ? ", " : "") + object;
                }
                out += "]";
            }
            if (!continues(r, i, c.turns.size())) out += "</s>";
        }
    }
    if (lastUser == c.turns.size() && c.offer) {  // no user message: the tools alone open the answer
        out += "[AVAILABLE_TOOLS] [";
        for (size_t t = 0; t < r.tools.size(); ++t) out += (t ? ", " : "") + pythonJson(r.tools[t].declaration);
        out += "][/AVAILABLE_TOOLS][INST] " + c.system + " [/INST]";
    }
    return out;
}

// Every other template: the functions and a JSON answer format in the system prompt, calls written
// as that JSON, results as user turns.
std::string generic(const ServeRequest& r, const Conversation& c, const ChatTemplate& tmpl) {
    std::string system = c.system;
    if (c.offer) {
        std::string tools;
        for (const ToolFunction& t : r.tools) tools += pythonJson(t.declaration) + "\n";
        system += (system.empty() ? "" : "\n\n") +
                  std::string("You may call these functions, declared as JSON:\n") + tools +
                  "To call one or more of them, answer with only this JSON object and nothing else: "
                  "{\"tool_calls\": [{\"name\": <function name>, \"arguments\": <arguments object>}]}. Otherwise answer in plain text.";
    }
    std::vector<PromptTurn> turns;
    for (size_t i = 0; i < c.turns.size(); ++i) {
        const ChatMessage* m = c.turns[i];
        if (m->toolResult) {
            std::string result = fmt::format("Result of call {}:\n{}", ordered_json(m->toolCallId).dump(), m->content);
            if (i > 0 && c.turns[i - 1]->toolResult)
                turns.back().text += "\n\n" + result;
            else
                turns.push_back(PromptTurn{ChatRole::User, std::move(result), {}});
        } else if (!m->toolCalls.empty()) {
            std::string calls;
            for (const ToolCall& call : m->toolCalls) calls += (calls.empty() ? "" : ", ") + callObject(call, "arguments");
            turns.push_back(PromptTurn{ChatRole::Assistant, m->content + (m->content.empty() ? "" : "\n") + "{\"tool_calls\": [" + calls + "]}", {}});
        } else {
            turns.push_back(PromptTurn{m->role, m->content, {}});
        }
    }
    std::string answerSoFar;
    if (r.continueFinalMessage && !turns.empty() && turns.back().role == ChatRole::Assistant) {
        answerSoFar = std::move(turns.back().text);
        turns.pop_back();
    }
    if (turns.empty() || turns.back().role != ChatRole::User) turns.push_back(PromptTurn{ChatRole::User, "", {}});
    std::string out;
    for (const PromptChunk& chunk : PromptBuilder(tmpl, system, false).chunks(std::move(turns))) out += chunk.text;
    return out + answerSoFar;
}

}  // namespace

ToolSyntax toolSyntaxFor(ChatTemplateKind kind) {
    switch (kind) {
        case ChatTemplateKind::Llama3: return ToolSyntax::Llama3;
        case ChatTemplateKind::ChatML: return ToolSyntax::Hermes;
        case ChatTemplateKind::Mistral: return ToolSyntax::Mistral;
        default: return ToolSyntax::Generic;
    }
}

bool usesToolPrompt(const ServeRequest& r) { return r.endpoint == Endpoint::Chat && (!r.tools.empty() || r.hasToolMessages()); }

std::string pythonJson(const ordered_json& value, int indent) {
    std::string out;
    dumpPython(value, indent, 0, out);
    return out;
}

std::string toolPromptText(const ServeRequest& r, const ChatTemplate& tmpl) {
    const Conversation c = split(r);
    switch (toolSyntaxFor(tmpl.kind)) {
        case ToolSyntax::Llama3: return llama3(r, c);
        case ToolSyntax::Hermes: return hermes(r, c);
        case ToolSyntax::Mistral: return mistral(r, c);
        case ToolSyntax::Generic: return generic(r, c, tmpl);
    }
    return generic(r, c, tmpl);
}

}  // namespace inferscope::server
