// libFuzzer target: a request body as `inferscope-cli serve` takes it from the network, parsed for
// both endpoints (server/openai_request.h). Besides the sanitizers, it checks what the server relies
// on: a refusal is a 400 with a message of the parser's own (nothing of the body repeated) and an
// error JSON that serializes; an accepted request holds only values in the ranges the parser
// promises. Run with -max_len equal to the server's body limit (4 MiB) and a small stack
// (scripts/ci-fuzz.sh): JSON nested a million levels deep must be refused, not recursed into.
// Tools: an accepted request's conversation renders in every template family and its calls'
// grammar compiles in every syntax; the body, read as a model's answer, goes through the tool-call
// parser of every syntax (server/tool_format.h), whose calls are of offered functions with JSON
// arguments.

#include <algorithm>
#include <cstdint>

#include <string_view>

#include "grammar/gbnf.h"
#include "server/openai_request.h"
#include "server/tool_format.h"
#include "server/tool_stream.h"
#include "require.h"

namespace {

using namespace inferscope::server;

constexpr ToolSyntax kSyntaxes[] = {ToolSyntax::Llama3, ToolSyntax::Hermes, ToolSyntax::Mistral, ToolSyntax::Generic};

void checkAnswer(std::string_view answer, const std::vector<ToolFunction>& tools) {
    for (ToolSyntax syntax : kSyntaxes) {
        const ParsedAnswer a = parseToolAnswer(syntax, answer, tools);
        if (a.calls.empty()) FUZZ_REQUIRE(a.content == answer, "an answer without calls is its text");
        for (const ToolCall& c : a.calls) {
            bool offered = false;
            for (const ToolFunction& t : tools) offered = offered || t.name == c.name;
            FUZZ_REQUIRE(offered, "a call is of an offered function");
            FUZZ_REQUIRE(!nlohmann::json::parse(c.arguments, nullptr, false).is_discarded(), "a call's arguments are JSON");
        }
        FUZZ_REQUIRE(toolSafeContentLength(syntax, answer) <= answer.size(), "streamed content is part of the answer");
        // Streamed in pieces of 7 bytes (at most 16,384 pieces, as many tokens as a long answer
        // has): the content and each call's arguments, put together, are the parse's.
        ToolCallStream stream(syntax, tools);
        std::string content;
        std::vector<std::string> args;
        auto take = [&](const StreamPart& p) {
            content += p.content;
            for (const CallDelta& d : p.calls) {
                if (d.opens) FUZZ_REQUIRE(d.index == args.size(), "calls open in order");
                if (d.opens) args.emplace_back();
                FUZZ_REQUIRE(d.index < args.size(), "arguments of an opened call");
                if (d.index < args.size()) args[d.index] += d.arguments;
            }
        };
        const size_t piece = std::max<size_t>(7, answer.size() / 16384 + 1);
        for (size_t at = 0; at < answer.size(); at += piece) take(stream.push(std::string(answer.substr(at, piece))));
        bool calls = false;
        take(stream.finish(true, calls));
        FUZZ_REQUIRE(calls == !a.calls.empty(), "the stream ends in calls exactly when the answer is calls");
        if (calls) {
            FUZZ_REQUIRE(content == a.content, "the streamed content is the text before the calls");
            FUZZ_REQUIRE(args.size() == a.calls.size(), "as many calls streamed as parsed");
            for (size_t i = 0; i < args.size() && i < a.calls.size(); ++i) FUZZ_REQUIRE(args[i] == a.calls[i].arguments, "streamed arguments are the parse's");
        } else {
            FUZZ_REQUIRE(content == answer, "an answer without calls streams as its text");
        }
    }
}

// Two functions any answer may call, for the bodies that offer none.
const std::vector<ToolFunction>& someTools() {
    static const std::vector<ToolFunction> tools = [] {
        auto r = parseServeRequest(R"({"messages":[{"role":"user","content":"x"}],"tools":[{"type":"function","function":{"name":"get_weather",)"
                                   R"("parameters":{"type":"object","properties":{"city":{"type":"string"}}}}},{"type":"function",)"
                                   R"("function":{"name":"f"}}]})", Endpoint::Chat);
        FUZZ_REQUIRE(r.has_value(), "the fixed tools parse");
        return r->tools;
    }();
    return tools;
}

void checkTools(const ServeRequest& r) {
    FUZZ_REQUIRE(r.tools.size() <= kMaxTools, "at most 128 tools");
    FUZZ_REQUIRE(r.toolChoice == ToolChoice::None || !r.tools.empty(), "a tool choice only with tools");
    for (inferscope::ChatTemplateKind kind : inferscope::allChatTemplateKinds())
        if (usesToolPrompt(r)) FUZZ_REQUIRE(!toolPromptText(r, inferscope::ChatTemplate{kind}).empty() || r.messages.empty(), "a prompt renders");
    if (r.toolChoice == ToolChoice::None) return;
    for (ToolSyntax syntax : kSyntaxes) {
        inferscope::grammar::GbnfLimits limits;
        limits.quoteInput = false;
        FUZZ_REQUIRE(inferscope::grammar::parseGbnf(toolCallGbnf(syntax, r), limits).has_value(), "the calls' grammar compiles");
    }
}

void check(std::string_view body, Endpoint endpoint) {
    const auto r = parseServeRequest(body, endpoint);
    if (!r) {
        FUZZ_REQUIRE(r.error().status == 400, "a refused body is a 400");
        FUZZ_REQUIRE(!r.error().message.empty(), "a refusal says why");
        // No value of the body is repeated: the messages are the parser's own ASCII texts, so a
        // byte outside printable ASCII could only have come from the body.
        for (char c : r.error().message + r.error().param)
            FUZZ_REQUIRE(c >= ' ' && c <= '~', "a refusal repeats nothing of the body");
        const std::string wire = errorJson(r.error()).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
        FUZZ_REQUIRE(!wire.empty(), "the error JSON serializes");
        return;
    }
    FUZZ_REQUIRE(r->endpoint == endpoint, "the endpoint is kept");
    FUZZ_REQUIRE(r->topLogprobs >= 0 && r->topLogprobs <= kMaxTopLogprobs, "top_logprobs in [0, 20]");
    FUZZ_REQUIRE(r->sampler.topN == r->topLogprobs, "the sampler keeps as many alternatives as asked");
    FUZZ_REQUIRE(r->stop.size() <= kMaxStopStrings, "at most 4 stop strings");
    for (const auto& s : r->stop) FUZZ_REQUIRE(!s.empty(), "no empty stop string");
    FUZZ_REQUIRE(!r->maxTokens || *r->maxTokens >= (r->echo ? 0 : 1), "max_tokens at least 1 (0 with echo)");
    FUZZ_REQUIRE(!r->echo || endpoint == Endpoint::Completion, "echo on completions only");
    FUZZ_REQUIRE((r->format == OutputFormat::Text) == !r->grammar, "a grammar exactly when structured output is asked");
    FUZZ_REQUIRE(r->sampler.temperature >= 0 && r->sampler.temperature <= 2, "temperature in [0, 2]");
    FUZZ_REQUIRE(r->sampler.topP > 0 && r->sampler.topP <= 1, "top_p in (0, 1]");
    FUZZ_REQUIRE(r->sampler.minP >= 0 && r->sampler.minP <= 1, "min_p in [0, 1]");
    FUZZ_REQUIRE(r->sampler.topK >= 0, "top_k not negative");
    if (endpoint == Endpoint::Chat) FUZZ_REQUIRE(!r->messages.empty(), "a chat request has messages");
    FUZZ_REQUIRE(!r->promptLogprobs || (*r->promptLogprobs >= 0 && *r->promptLogprobs <= kMaxTopLogprobs), "prompt_logprobs in [0, 20]");
    FUZZ_REQUIRE(!r->promptLogprobs || !r->stream, "prompt_logprobs not streamed");
    FUZZ_REQUIRE(r->logprobTokenIds.size() <= kMaxLogprobTokenIds, "at most 64 named tokens");
    FUZZ_REQUIRE(r->logprobTokenIds.empty() || r->logprobs, "named tokens only with logprobs");
    for (int32_t id : r->logprobTokenIds) FUZZ_REQUIRE(id >= 0, "named token ids not negative");
    FUZZ_REQUIRE(r->sampler.finalTopN == (r->logprobs && r->logprobsMode == LogprobsMode::Processed ? r->topLogprobs : 0),
            "the drawn distribution's alternatives recorded exactly for processed logprobs");
    checkTools(*r);
    if (!r->tools.empty()) checkAnswer(body, r->tools);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string_view body(reinterpret_cast<const char*>(data), size);
    check(body, Endpoint::Chat);
    check(body, Endpoint::Completion);
    checkAnswer(body, someTools());
    return 0;
}
