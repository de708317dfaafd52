// Tool calls in OpenAI's response shapes (see openai_tool_response.h).
#include "server/openai_tool_response.h"

namespace inferscope::server {

void setToolCalls(Json& choice, ParsedAnswer& answer) {
    Json calls = Json::array();
    for (ToolCall& c : answer.calls) {
        if (c.id.empty()) c.id = newToolCallId();
        calls.push_back({{"id", c.id}, {"type", "function"}, {"function", {{"name", c.name}, {"arguments", c.arguments}}}});
    }
    Json& message = choice["message"];
    message["content"] = answer.content.empty() ? Json(nullptr) : Json(answer.content);
    message["tool_calls"] = std::move(calls);
    choice["finish_reason"] = kFinishToolCalls;
}

Json toolDeltaChunk(const ResponseHeader& h, const ServeRequest& r, const CallDelta& d, bool first) {
    Json chunk = completionChunk(h, "", {}, r, {}, first, "x");  // a finished chunk's delta: empty, or the role when first
    Json& choice = chunk["choices"][0];
    choice["finish_reason"] = nullptr;
    Json call = {{"index", d.index}};
    if (d.opens) {
        call["id"] = d.id;
        call["type"] = "function";
        call["function"] = {{"name", d.name}, {"arguments", ""}};
    } else {
        call["function"] = {{"arguments", d.arguments}};
    }
    choice["delta"]["tool_calls"] = Json::array({std::move(call)});
    return chunk;
}

std::string toolStreamEvents(const ResponseHeader& h, const ServeRequest& r, const StreamPart& part, bool& first) {
    std::string out;
    if (!part.content.empty()) {
        out += sseEvent(completionChunk(h, part.content, {}, r, {}, first));
        first = false;
    }
    for (const CallDelta& d : part.calls) {
        out += sseEvent(toolDeltaChunk(h, r, d, first));
        first = false;
    }
    return out;
}

}  // namespace inferscope::server
