#pragma once
// Tool calls in the answer, shaped as OpenAI's API: `message.tool_calls` with `content` null when
// the answer is only calls, and while streaming `delta.tool_calls` chunks (a call's first chunk:
// index, id, type and name with arguments ""; its next: the arguments), finish_reason
// "tool_calls". While an answer streams, text that is or may become a call is held back
// (ToolContentGate).

#include <string>
#include <vector>

#include "server/openai_response.h"
#include "server/tool_format.h"

namespace inferscope::server {

inline constexpr std::string_view kFinishToolCalls = "tool_calls";

// "call_" and 24 random letters and digits.
std::string newToolCallId();
// The parsed answer into a chat completion's choice: message.content (null when empty and there are
// calls), message.tool_calls, finish_reason "tool_calls". Calls without an id are given one.
void setToolCalls(Json& choice, ParsedAnswer& answer);
// A call's streamed chunks: its name (with the role when `first`), then its arguments.
std::vector<Json> toolCallChunks(const ResponseHeader& h, const ServeRequest& r, size_t index, const ToolCall& call, bool first);

// The content a tool answer may show while it streams: text, never a call nor what may yet
// become one.
class ToolContentGate {
public:
    explicit ToolContentGate(ToolSyntax syntax) : syntax_(syntax) {}
    std::string push(const std::string& delta);  // what may be shown now
    // The answer is whole: the text not yet shown of `content` (the parsed answer's text).
    std::string finish(const std::string& content);
    const std::string& text() const { return text_; }

private:
    friend std::string toolStreamEnd(const ResponseHeader&, const ServeRequest&, ToolContentGate&, bool, bool&, std::string_view&);
    ToolSyntax syntax_;
    std::string text_;
    size_t shown_ = 0;
};

// The end of a streamed tool answer, as SSE events: the content still held back, then (`whole`:
// the answer was not cut short) each call's chunks; finish becomes "tool_calls" when there are
// calls, `first` false when a chunk was written.
std::string toolStreamEnd(const ResponseHeader& h, const ServeRequest& r, ToolContentGate& gate, bool whole, bool& first,
                          std::string_view& finish);

}  // namespace inferscope::server
