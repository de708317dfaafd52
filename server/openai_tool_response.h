#pragma once
// Tool calls in the answer, shaped as OpenAI's API: `message.tool_calls` with `content` null when
// the answer is only calls, and while streaming `delta.tool_calls` chunks (a call's first chunk:
// index, id, type and name with arguments ""; its next: fragments of the arguments as they are
// generated), finish_reason "tool_calls". What a streamed tool answer may show: tool_stream.h.

#include <string>
#include <vector>

#include "server/openai_response.h"
#include "server/tool_format.h"
#include "server/tool_stream.h"

namespace inferscope::server {

inline constexpr std::string_view kFinishToolCalls = "tool_calls";

// The parsed answer into a chat completion's choice: message.content (null when empty and there are
// calls), message.tool_calls, finish_reason "tool_calls". Calls without an id are given one.
void setToolCalls(Json& choice, ParsedAnswer& answer);
// A streamed call's chunk: its opening (with the role when `first`) or a fragment of its arguments.
Json toolDeltaChunk(const ResponseHeader& h, const ServeRequest& r, const CallDelta& delta, bool first);
// A streamed part as SSE events: its content, then its calls' chunks; `first` false once one is written.
std::string toolStreamEvents(const ResponseHeader& h, const ServeRequest& r, const StreamPart& part, bool& first);

}  // namespace inferscope::server
