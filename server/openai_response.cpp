#include "server/openai_response.h"

namespace inferscope::server {
namespace {

double logprobOf(float logit, float logSumExp) { return double(logit) - double(logSumExp); }

Json bytesOf(std::string_view piece) {
    Json bytes = Json::array();
    for (unsigned char c : piece) bytes.push_back(int(c));
    return bytes;
}

std::string pieceText(const StepPieceLookup& pieceOf, int32_t id) {
    if (!pieceOf) return {};
    return pieceOf(id).value_or(std::string());
}

// The record as the shared schema writes it, its top list cut to what was asked.
Json extension(const StepRecord& step, int32_t topLogprobs, const StepPieceLookup& pieceOf) {
    Json record = stepRecordJson(step, pieceOf);
    Json& top = record["top"];
    if (top.size() > size_t(topLogprobs)) top.erase(top.begin() + topLogprobs, top.end());
    return record;
}

Json base(const ResponseHeader& h, bool chunk) {
    Json o = Json::object();
    o["id"] = h.id;
    o["object"] = h.endpoint == Endpoint::Chat ? (chunk ? "chat.completion.chunk" : "chat.completion") : "text_completion";
    o["created"] = h.created;
    o["model"] = h.model;
    return o;
}

Json logprobsFor(const std::vector<StepRecord>& steps, const ServeRequest& r, const StepPieceLookup& pieceOf, size_t textStart) {
    if (!r.logprobs) return nullptr;
    if (r.endpoint == Endpoint::Completion) return completionLogprobs(steps, r.topLogprobs, pieceOf, textStart);
    Json content = Json::array();
    for (const StepRecord& s : steps) content.push_back(chatTokenLogprob(s, r.topLogprobs, pieceOf));
    return {{"content", content}};
}

Json finishJson(std::string_view finish) { return finish.empty() ? Json(nullptr) : Json(finish); }

}  // namespace

std::string_view openAiFinishReason(FinishReason reason) {
    switch (reason) {
        case FinishReason::EndOfGeneration:
        case FinishReason::StopString: return "stop";
        case FinishReason::MaxTokens:
        case FinishReason::ContextFull: return "length";
        case FinishReason::Cancelled: return "";
    }
    return "";
}

Json usageJson(const GenerationSummary& s) {
    return {{"prompt_tokens", s.prefill.nPrompt}, {"completion_tokens", s.nGenerated}, {"total_tokens", s.prefill.nPrompt + s.nGenerated}};
}

Json timingsJson(const GenerationSummary& s) {
    Json t = {{"prompt_tokens_reused", s.prefill.nReused},
              {"prefill_ms", double(s.prefill.us) / 1000.0},
              {"prefill_tokens_per_s", s.prefill.tokensPerSecond()},
              {"decode_ms", double(s.decodeUs) / 1000.0},
              {"decode_tokens_per_s", s.decodeTokensPerSecond()},
              {"time_to_first_token_ms", double(s.timeToFirstTokenUs) / 1000.0}};
    if (s.draftN > 0 || s.draftAccepted > 0) {  // speculative decoding: llama.cpp's server's names
        t["draft_n"] = s.draftN;
        t["draft_n_accepted"] = s.draftAccepted;
    }
    return t;
}

Json chatTokenLogprob(const StepRecord& step, int32_t topLogprobs, const StepPieceLookup& pieceOf) {
    const SampleRecord& s = step.sample;
    Json o = Json::object();
    o["token"] = step.piece;
    o["logprob"] = logprobOf(s.logit, s.logSumExp);
    o["bytes"] = bytesOf(step.piece);
    Json top = Json::array();
    for (size_t i = 0; i < s.top.size() && i < size_t(topLogprobs); ++i) {
        const std::string piece = pieceText(pieceOf, s.top[i].id);
        top.push_back({{"token", piece}, {"logprob", logprobOf(s.top[i].logit, s.logSumExp)}, {"bytes", bytesOf(piece)}});
    }
    o["top_logprobs"] = std::move(top);
    o["inferscope"] = extension(step, topLogprobs, pieceOf);
    return o;
}

Json completionLogprobs(const std::vector<StepRecord>& steps, int32_t topLogprobs, const StepPieceLookup& pieceOf, size_t textStart) {
    Json tokens = Json::array(), logprobs = Json::array(), tops = Json::array(), offsets = Json::array(), ext = Json::array();
    size_t offset = textStart;
    for (const StepRecord& step : steps) {
        const SampleRecord& s = step.sample;
        tokens.push_back(step.piece);
        logprobs.push_back(logprobOf(s.logit, s.logSumExp));
        Json top = Json::object();
        for (size_t i = 0; i < s.top.size() && i < size_t(topLogprobs); ++i)
            top[pieceText(pieceOf, s.top[i].id)] = logprobOf(s.top[i].logit, s.logSumExp);
        tops.push_back(std::move(top));
        offsets.push_back(offset);
        offset += step.piece.size();
        ext.push_back(extension(step, topLogprobs, pieceOf));
    }
    return {{"tokens", tokens}, {"token_logprobs", logprobs}, {"top_logprobs", tops}, {"text_offset", offsets}, {"inferscope", ext}};
}

void prependEcho(Json& choice, const std::string& prompt, const std::vector<PromptTokenLogprob>& tokens, bool logprobs) {
    choice["text"] = prompt + choice["text"].get<std::string>();
    if (!logprobs) return;
    Json& lp = choice["logprobs"];
    if (lp.is_null()) lp = completionLogprobs({}, 0, {}, 0);
    Json out = {{"tokens", Json::array()}, {"token_logprobs", Json::array()}, {"top_logprobs", Json::array()},
                {"text_offset", Json::array()}, {"inferscope", Json::array()}};
    size_t offset = 0;
    for (const PromptTokenLogprob& t : tokens) {
        out["tokens"].push_back(t.piece);
        out["token_logprobs"].push_back(t.logprob ? Json(*t.logprob) : Json(nullptr));
        if (t.logprob) {
            Json top = Json::object();
            for (const auto& [piece, logprob] : t.top) top[piece] = logprob;
            out["top_logprobs"].push_back(std::move(top));
        } else {
            out["top_logprobs"].push_back(nullptr);
        }
        out["text_offset"].push_back(std::min(offset, prompt.size()));
        offset += t.piece.size();
        out["inferscope"].push_back(nullptr);
    }
    for (const char* key : {"tokens", "token_logprobs", "top_logprobs", "inferscope"})
        for (Json& v : lp[key]) out[key].push_back(std::move(v));
    for (const Json& v : lp["text_offset"]) out["text_offset"].push_back(v.get<size_t>() + prompt.size());
    lp = std::move(out);
}

Json completionResponse(const ResponseHeader& h, const std::string& text, const GenerationSummary& summary,
                        const std::vector<StepRecord>& steps, const ServeRequest& r, const StepPieceLookup& pieceOf,
                        std::optional<std::string_view> finish) {
    Json o = base(h, false);
    Json choice = Json::object();
    choice["index"] = 0;
    if (h.endpoint == Endpoint::Chat) choice["message"] = {{"role", "assistant"}, {"content", text}};
    else choice["text"] = text;
    choice["logprobs"] = logprobsFor(steps, r, pieceOf, 0);
    choice["finish_reason"] = finishJson(finish.value_or(openAiFinishReason(summary.reason)));
    o["choices"] = Json::array({choice});
    o["usage"] = usageJson(summary);
    o["timings"] = timingsJson(summary);
    return o;
}

Json completionChunk(const ResponseHeader& h, const std::string& delta, const std::vector<StepRecord>& steps,
                     const ServeRequest& r, const StepPieceLookup& pieceOf, bool first, std::string_view finish,
                     size_t textOffset) {
    Json o = base(h, true);
    Json choice = Json::object();
    choice["index"] = 0;
    if (h.endpoint == Endpoint::Chat) {
        Json d = Json::object();
        if (first) d["role"] = "assistant";
        if (!delta.empty() || finish.empty()) d["content"] = delta;
        choice["delta"] = std::move(d);
    } else {
        choice["text"] = delta;
    }
    choice["logprobs"] = steps.empty() ? Json(nullptr) : logprobsFor(steps, r, pieceOf, textOffset);
    choice["finish_reason"] = finishJson(finish);
    o["choices"] = Json::array({choice});
    return o;
}

Json usageChunk(const ResponseHeader& h, const GenerationSummary& summary) {
    Json o = base(h, true);
    o["choices"] = Json::array();
    o["usage"] = usageJson(summary);
    o["timings"] = timingsJson(summary);
    return o;
}

std::string dumpJson(const Json& j) { return j.dump(-1, ' ', false, Json::error_handler_t::replace); }

std::string sseEvent(const Json& j) { return "data: " + dumpJson(j) + "\n\n"; }

}  // namespace inferscope::server
