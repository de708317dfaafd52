// Tool calls in OpenAI's response shapes (see openai_tool_response.h).
#include "server/openai_tool_response.h"

#include <mutex>
#include <random>

namespace inferscope::server {

std::string newToolCallId() {
    static std::mutex mutex;
    static std::mt19937_64 random{std::random_device{}()};
    constexpr std::string_view kAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    std::lock_guard lock(mutex);
    std::string id = "call_";
    for (int i = 0; i < 24; ++i) id += kAlphabet[random() % kAlphabet.size()];
    return id;
}

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

std::vector<Json> toolCallChunks(const ResponseHeader& h, const ServeRequest& r, size_t index, const ToolCall& call, bool first) {
    std::vector<Json> out;
    Json named = completionChunk(h, "", {}, r, {}, first, "x");  // a finished chunk's empty delta (the role when first)
    named["choices"][0]["finish_reason"] = nullptr;
    Json arguments = named;
    arguments["choices"][0]["delta"] = Json::object();
    named["choices"][0]["delta"]["tool_calls"] =
        Json::array({{{"index", index}, {"id", call.id}, {"type", "function"}, {"function", {{"name", call.name}, {"arguments", ""}}}}});
    arguments["choices"][0]["delta"]["tool_calls"] = Json::array({{{"index", index}, {"function", {{"arguments", call.arguments}}}}});
    out.push_back(std::move(named));
    out.push_back(std::move(arguments));
    return out;
}

std::string ToolContentGate::push(const std::string& delta) {
    text_ += delta;
    const size_t safe = toolSafeContentLength(syntax_, text_);
    if (safe <= shown_) return {};
    std::string out = text_.substr(shown_, safe - shown_);
    shown_ = safe;
    return out;
}

std::string ToolContentGate::finish(const std::string& content) {
    if (content.size() <= shown_) return {};
    std::string out = content.substr(shown_);
    shown_ = content.size();
    return out;
}

std::string toolStreamEnd(const ResponseHeader& h, const ServeRequest& r, ToolContentGate& gate, bool whole, bool& first,
                          std::string_view& finish) {
    ParsedAnswer answer = whole ? parseToolAnswer(gate.syntax_, gate.text(), r.tools) : ParsedAnswer{gate.text(), {}};
    std::string out;
    if (const std::string rest = gate.finish(answer.content); !rest.empty()) {
        out += sseEvent(completionChunk(h, rest, {}, r, {}, first));
        first = false;
    }
    for (size_t i = 0; i < answer.calls.size(); ++i) {
        answer.calls[i].id = newToolCallId();
        for (const Json& chunk : toolCallChunks(h, r, i, answer.calls[i], first)) out += sseEvent(chunk);
        first = false;
    }
    if (!answer.calls.empty()) finish = kFinishToolCalls;
    return out;
}

}  // namespace inferscope::server
