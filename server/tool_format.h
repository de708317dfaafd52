#pragma once
// Tool calls as each chat template family writes them (docs/SERVING.md, "Tools"): how the tools
// and a conversation's calls and results are rendered into the prompt (tool_prompt.cpp), the
// grammar the answer is generated under when tools are offered (tool_grammar.cpp), and the calls
// parsed back out of the generated text (tool_parse.cpp).
//
//   Llama3   (Llama 3.1 / 3.2)  {"name": "f", "parameters": {...}}           the whole answer, one call
//   Hermes   (ChatML: Qwen 2.5 / Qwen 3)  <tool_call>\n{"name": "f", "arguments": {...}}\n</tool_call>
//   Mistral  [TOOL_CALLS] [{"name": "f", "arguments": {...}}, ...]
//   Generic  (Phi-3 and every other template)  {"tool_calls": [{"name": "f", "arguments": {...}}, ...]}

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.h"
#include "engine/chat_template.h"
#include "server/openai_request.h"

namespace inferscope {
class Tokenizer;
}

namespace inferscope::server {

enum class ToolSyntax { Llama3, Hermes, Mistral, Generic };
ToolSyntax toolSyntaxFor(ChatTemplateKind kind);

// Whether the request goes through the tool renderer (tools offered, or calls and results in the
// conversation).
bool usesToolPrompt(const ServeRequest& r);
// The prompt's text for such a request, special tokens as their pieces (tokenized with them
// parsed); BOS is the tokenizer's to add when tmpl.tokenizerAddsBos().
std::string toolPromptText(const ServeRequest& r, const ChatTemplate& tmpl);

// The grammar of the answer (GBNF text, root rule `root`): with tool_choice auto, plain text (not
// starting as a call does) or calls; required: one or more calls (one when parallel_tool_calls is
// false); named: calls of that function. Each call's arguments follow its function's schema.
std::string toolCallGbnf(ToolSyntax syntax, const ServeRequest& r);

// The answer split into text and calls. An answer that does not hold well-formed calls of the
// offered functions in the syntax is text alone (calls empty, content the whole text). Calls'
// arguments are their JSON text as the model wrote it; ids are left empty (the server gives them).
struct ParsedAnswer {
    std::string content;  // the text before the calls (trailing white space dropped)
    std::vector<ToolCall> calls;
};
ParsedAnswer parseToolAnswer(ToolSyntax syntax, std::string_view text, const std::vector<ToolFunction>& tools);

// Streaming: how many bytes of `text` (the answer so far) may be shown as content now: none of a
// call, nor of what may yet become the start of one.
size_t toolSafeContentLength(ToolSyntax syntax, std::string_view text);

// A value rendered as Python's json.dumps writes it (", " and ": " between items, or `indent`
// spaces per level when indent > 0), which the templates' `tojson` produce.
std::string pythonJson(const nlohmann::ordered_json& value, int indent = 0);

}  // namespace inferscope::server
