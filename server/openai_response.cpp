#include "server/openai_response.h"

#include <cmath>

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
    if (r.endpoint == Endpoint::Completion) return completionLogprobs(steps, r.topLogprobs, pieceOf, textStart, r.logprobsMode, r.logprobTokenIds);
    Json content = Json::array();
    for (const StepRecord& s : steps) content.push_back(chatTokenLogprob(s, r.topLogprobs, pieceOf, r.logprobsMode, r.logprobTokenIds));
    return {{"content", content}};
}

Json finishJson(std::string_view finish) { return finish.empty() ? Json(nullptr) : Json(finish); }

// OpenAI's floor for a token with no probability (JSON has no -infinity).
constexpr double kNoProbability = -9999.0;

double chosenLogprob(const SampleRecord& s, LogprobsMode mode) {
    if (mode == LogprobsMode::Raw) return logprobOf(s.logit, s.logSumExp);
    return s.pFinal > 0 ? std::log(double(s.pFinal)) : kNoProbability;
}

// The alternatives, most probable first: the raw top-N, or the drawn distribution's survivors.
template <typename F>
void forEachTop(const SampleRecord& s, int32_t topLogprobs, LogprobsMode mode, F&& f) {
    if (mode == LogprobsMode::Raw) {
        for (size_t i = 0; i < s.top.size() && i < size_t(topLogprobs); ++i) f(s.top[i].id, logprobOf(s.top[i].logit, s.logSumExp));
        return;
    }
    for (size_t i = 0; i < s.finalTop.size() && i < size_t(topLogprobs); ++i)
        f(s.finalTop[i].id, s.finalTop[i].p > 0 ? std::log(double(s.finalTop[i].p)) : kNoProbability);
}

Json namedLogprobs(const StepRecord& step, std::span<const int32_t> namedIds, const StepPieceLookup& pieceOf) {
    Json out = Json::array();
    for (size_t i = 0; i < namedIds.size(); ++i) {
        const bool kept = i < step.namedLogits.size() && std::isfinite(step.namedLogits[i]);
        out.push_back({{"id", namedIds[i]},
                       {"token", pieceText(pieceOf, namedIds[i])},
                       {"logprob", kept ? logprobOf(step.namedLogits[i], step.sample.logSumExp) : kNoProbability}});
    }
    return out;
}

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
    return {{"prompt_tokens", s.prefill.nPrompt},
            {"completion_tokens", s.nGenerated},
            {"total_tokens", s.prefill.nPrompt + s.nGenerated},
            {"prompt_tokens_details", {{"cached_tokens", s.prefill.nReused}}}};
}

Json timingsJson(const GenerationSummary& s) {
    Json t = {{"prompt_tokens_reused", s.prefill.nReused},
              {"prompt_tokens_copied", s.prefill.nCopied},
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

Json chatTokenLogprob(const StepRecord& step, int32_t topLogprobs, const StepPieceLookup& pieceOf, LogprobsMode mode,
                      std::span<const int32_t> namedIds) {
    const SampleRecord& s = step.sample;
    Json o = Json::object();
    o["token"] = step.piece;
    o["logprob"] = chosenLogprob(s, mode);
    o["bytes"] = bytesOf(step.piece);
    Json top = Json::array();
    forEachTop(s, topLogprobs, mode, [&](int32_t id, double logprob) {
        const std::string piece = pieceText(pieceOf, id);
        top.push_back({{"token", piece}, {"logprob", logprob}, {"bytes", bytesOf(piece)}});
    });
    o["top_logprobs"] = std::move(top);
    if (!namedIds.empty()) o["token_id_logprobs"] = namedLogprobs(step, namedIds, pieceOf);
    o["inferscope"] = extension(step, topLogprobs, pieceOf);
    return o;
}

Json completionLogprobs(const std::vector<StepRecord>& steps, int32_t topLogprobs, const StepPieceLookup& pieceOf, size_t textStart,
                        LogprobsMode mode, std::span<const int32_t> namedIds) {
    Json tokens = Json::array(), logprobs = Json::array(), tops = Json::array(), offsets = Json::array(), ext = Json::array();
    Json named = Json::array();
    size_t offset = textStart;
    for (const StepRecord& step : steps) {
        const SampleRecord& s = step.sample;
        tokens.push_back(step.piece);
        logprobs.push_back(chosenLogprob(s, mode));
        Json top = Json::object();
        forEachTop(s, topLogprobs, mode, [&](int32_t id, double logprob) { top[pieceText(pieceOf, id)] = logprob; });
        tops.push_back(std::move(top));
        offsets.push_back(offset);
        offset += step.piece.size();
        if (!namedIds.empty()) named.push_back(namedLogprobs(step, namedIds, pieceOf));
        ext.push_back(extension(step, topLogprobs, pieceOf));
    }
    Json o = {{"tokens", tokens}, {"token_logprobs", logprobs}, {"top_logprobs", tops}, {"text_offset", offsets}};
    if (!namedIds.empty()) o["token_id_logprobs"] = std::move(named);
    o["inferscope"] = std::move(ext);
    return o;
}

Json promptLogprobsJson(const std::vector<PromptPositionLogprobs>& positions, const StepPieceLookup& pieceOf) {
    Json out = Json::array();
    for (const PromptPositionLogprobs& p : positions) {
        if (!p.logprob) {
            out.push_back(nullptr);
            continue;
        }
        Json entry = Json::object();
        entry[std::to_string(p.id)] = {{"logprob", *p.logprob}, {"rank", p.rank}, {"decoded_token", pieceText(pieceOf, p.id)}};
        int32_t rank = 0;
        for (const auto& [id, logprob] : p.top) {
            ++rank;
            if (id == p.id) continue;
            entry[std::to_string(id)] = {{"logprob", logprob}, {"rank", rank}, {"decoded_token", pieceText(pieceOf, id)}};
        }
        out.push_back(std::move(entry));
    }
    return out;
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
    if (lp.contains("token_id_logprobs")) {  // the prompt's tokens have none: null, as the first token's logprob
        Json named = Json(tokens.size(), nullptr);
        for (Json& v : lp["token_id_logprobs"]) named.push_back(std::move(v));
        Json ext = std::move(out["inferscope"]);
        out.erase("inferscope");
        out["token_id_logprobs"] = std::move(named);
        out["inferscope"] = std::move(ext);
    }
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
