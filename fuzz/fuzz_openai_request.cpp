// libFuzzer target: a request body as `inferscope-cli serve` takes it from the network, parsed for
// both endpoints (server/openai_request.h). Besides the sanitizers, it checks what the server relies
// on: a refusal is a 400 with a message of the parser's own (nothing of the body repeated) and an
// error JSON that serializes; an accepted request holds only values in the ranges the parser
// promises. Run with -max_len equal to the server's body limit (4 MiB) and a small stack
// (scripts/ci-fuzz.sh): JSON nested a million levels deep must be refused, not recursed into.

#include <cstdint>
#include <cstdlib>
#include <cstdio>
#include <string_view>

#include "server/openai_request.h"

namespace {

using namespace inferscope::server;

void require(bool condition, const char* what) {
    if (condition) return;
    std::fprintf(stderr, "fuzz_openai_request: broken property: %s\n", what);
    std::abort();
}

void check(std::string_view body, Endpoint endpoint) {
    const auto r = parseServeRequest(body, endpoint);
    if (!r) {
        require(r.error().status == 400, "a refused body is a 400");
        require(!r.error().message.empty(), "a refusal says why");
        // No value of the body is repeated: the messages are the parser's own ASCII texts, so a
        // byte outside printable ASCII could only have come from the body.
        for (char c : r.error().message + r.error().param)
            require(c >= ' ' && c <= '~', "a refusal repeats nothing of the body");
        const std::string wire = errorJson(r.error()).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
        require(!wire.empty(), "the error JSON serializes");
        return;
    }
    require(r->endpoint == endpoint, "the endpoint is kept");
    require(r->topLogprobs >= 0 && r->topLogprobs <= kMaxTopLogprobs, "top_logprobs in [0, 20]");
    require(r->sampler.topN == r->topLogprobs, "the sampler keeps as many alternatives as asked");
    require(r->stop.size() <= kMaxStopStrings, "at most 4 stop strings");
    for (const auto& s : r->stop) require(!s.empty(), "no empty stop string");
    require(!r->maxTokens || *r->maxTokens >= (r->echo ? 0 : 1), "max_tokens at least 1 (0 with echo)");
    require(!r->echo || endpoint == Endpoint::Completion, "echo on completions only");
    require((r->format == OutputFormat::Text) == !r->grammar, "a grammar exactly when structured output is asked");
    require(r->sampler.temperature >= 0 && r->sampler.temperature <= 2, "temperature in [0, 2]");
    require(r->sampler.topP > 0 && r->sampler.topP <= 1, "top_p in (0, 1]");
    require(r->sampler.minP >= 0 && r->sampler.minP <= 1, "min_p in [0, 1]");
    require(r->sampler.topK >= 0, "top_k not negative");
    if (endpoint == Endpoint::Chat) require(!r->messages.empty(), "a chat request has messages");
    require(!r->promptLogprobs || (*r->promptLogprobs >= 0 && *r->promptLogprobs <= kMaxTopLogprobs), "prompt_logprobs in [0, 20]");
    require(!r->promptLogprobs || !r->stream, "prompt_logprobs not streamed");
    require(r->logprobTokenIds.size() <= kMaxLogprobTokenIds, "at most 64 named tokens");
    require(r->logprobTokenIds.empty() || r->logprobs, "named tokens only with logprobs");
    for (int32_t id : r->logprobTokenIds) require(id >= 0, "named token ids not negative");
    require(r->sampler.finalTopN == (r->logprobs && r->logprobsMode == LogprobsMode::Processed ? r->topLogprobs : 0),
            "the drawn distribution's alternatives recorded exactly for processed logprobs");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string_view body(reinterpret_cast<const char*>(data), size);
    check(body, Endpoint::Chat);
    check(body, Endpoint::Completion);
    return 0;
}
