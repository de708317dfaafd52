// Engine::decodeSpeculative: generation's decode loop under speculative decoding (speculative.h).
// Each round: draft up to k tokens (the draft model, or prompt lookup), run the pending token and
// the draft through the model in passes of at most LlamaModel::exactDecodeRows rows, then walk the draft with
// exact speculative sampling; the model's cache is cut back to what was accepted.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "backend/gemv.h"
#include "common/prefix.h"
#include "engine/compare.h"
#include "engine/engine.h"
#include "engine/highest_logits.h"
#include "engine/perplexity.h"
#include "engine/stop_strings.h"

namespace inferscope {
namespace {

using Clock = std::chrono::steady_clock;
int64_t usSince(Clock::time_point t0) { return std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - t0).count(); }

double probabilityOf(const std::vector<TokenProbability>& d, int32_t id) {
    for (const TokenProbability& t : d)
        if (t.id == id) return t.p;
    return 0.0;
}

// The draw from a distribution given as (id, p) in a fixed order: the first whose cumulative
// probability exceeds u × total.
int32_t drawFrom(const std::vector<TokenProbability>& d, double u) {
    double total = 0;
    for (const TokenProbability& t : d) total += t.p;
    double cumulative = 0;
    for (const TokenProbability& t : d) {
        cumulative += t.p;
        if (cumulative > u * total) return t.id;
    }
    return d.back().id;
}

// Prompt lookup: the tokens that followed the most recent earlier occurrence of the sequence's last
// n tokens, longest n first; at most k of them.
std::vector<int32_t> ngramDraft(const std::vector<int32_t>& seq, const SpeculativeOptions& o, int32_t k) {
    const int64_t size = int64_t(seq.size());
    for (int32_t n = std::min<int32_t>(o.ngramMax, int32_t(size) - 1); n >= o.ngramMin; --n) {
        const auto tail = seq.end() - n;
        for (int64_t start = size - n - 1; start >= 0; --start) {  // most recent first; not the tail itself
            if (!std::equal(tail, seq.end(), seq.begin() + start)) continue;
            const int64_t from = start + n;
            const int64_t count = std::min<int64_t>(k, size - from);
            if (count > 0) return {seq.begin() + from, seq.begin() + from + count};
        }
    }
    return {};
}

}  // namespace

SpeculativeChoice chooseSpeculative(const std::vector<TokenProbability>& p, const std::vector<TokenProbability>& q, int32_t drafted,
                                    double uAccept, double uCorrect) {
    SpeculativeChoice c;
    c.p = probabilityOf(p, drafted);
    c.q = probabilityOf(q, drafted);
    c.acceptProbability = c.q > 0 ? std::min(1.0, c.p / c.q) : 0.0;
    if (uAccept < c.acceptProbability) {
        c.token = drafted;
        c.accepted = true;
        return c;
    }
    std::vector<TokenProbability> residual;
    for (const TokenProbability& t : p)
        if (const double r = t.p - probabilityOf(q, t.id); r > 0) residual.push_back({t.id, r});
    c.token = drawFrom(residual.empty() ? p : residual, uCorrect);
    return c;
}

void describeDraftedPosition(const std::vector<TokenProbability>& p, const std::vector<TokenProbability>& q, bool corrected,
                             DraftRecord& out) {
    // The leading tokens of either side, with both probabilities.
    std::vector<DraftCandidate> all;
    auto add = [&](int32_t id) {
        if (std::any_of(all.begin(), all.end(), [id](const DraftCandidate& c) { return c.id == id; })) return;
        all.push_back({id, float(probabilityOf(p, id)), float(probabilityOf(q, id))});
    };
    for (size_t i = 0; i < p.size() && i < kDraftCandidates; ++i) add(p[i].id);
    for (size_t i = 0; i < q.size() && i < kDraftCandidates; ++i) add(q[i].id);
    std::sort(all.begin(), all.end(), [](const DraftCandidate& a, const DraftCandidate& b) {
        const float ma = std::max(a.p, a.q), mb = std::max(b.p, b.q);
        return ma != mb ? ma > mb : a.id < b.id;
    });
    if (all.size() > kDraftCandidates) all.resize(kDraftCandidates);
    out.candidates = std::move(all);
    out.residual.clear();
    out.residualMass = 0.0f;
    if (!corrected) return;
    // As chooseSpeculative draws the correction: max(0, p − q) over p's tokens, in p's order.
    std::vector<std::pair<int32_t, double>> residual;
    double mass = 0;
    for (const TokenProbability& t : p)
        if (const double r = t.p - probabilityOf(q, t.id); r > 0) {
            residual.emplace_back(t.id, r);
            mass += r;
        }
    if (mass <= 0) return;  // p ≤ q everywhere: the correction was drawn from p itself
    std::stable_sort(residual.begin(), residual.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
    if (residual.size() > kDraftResidual) residual.resize(kDraftResidual);
    for (const auto& [id, r] : residual) out.residual.push_back({id, float(r / mass)});
    out.residualMass = float(mass);
}

Result<void> Engine::checkSpeculative(const GenerateRequest& request) const {
    if (!request.speculative) return {};
    const SpeculativeOptions& o = *request.speculative;
    auto bad = [](std::string m) { return fail(ErrorKind::InvalidArgument, std::move(m)); };
    if (!request.useKvCache) return bad("speculative decoding needs the KV cache (it verifies drafts against it)");
    if (request.inspect.lens || request.inspect.lensStep >= 0 || request.inspect.attentionStep >= 0)
        return bad("looking inside a position (logit lens, attention) is not available with speculative decoding");
    if (o.maxDraft < 1 || o.maxDraft > 16) return bad(fmt::format("the draft length must be 1 to 16, got {}", o.maxDraft));
    if (!(o.pMin >= 0.0f && o.pMin <= 1.0f)) return bad(fmt::format("the draft's p-min must be in [0, 1], got {}", o.pMin));
    if (o.source == DraftSource::NGram) {
        if (o.ngramMin < 1 || o.ngramMax < o.ngramMin || o.ngramMax > 16)
            return bad(fmt::format("n-gram lengths must satisfy 1 <= min <= max <= 16, got {} and {}", o.ngramMin, o.ngramMax));
        return {};
    }
    if (!o.draftModel) return bad("speculative decoding with a draft model needs the draft model");
    if (o.draftModel == this) return bad("the draft model must be another engine than the model's");
    return checkSameVocabulary(tokenizer(), o.draftModel->tokenizer());
}

Result<GenerationSummary> Engine::decodeSpeculative(const GenerateRequest& request, GenerationObserver* observer, const CancelCheck& cancel,
                                                    std::vector<int32_t> sequence, std::span<const float> prefillLogits,
                                                    GenerationSummary summary, Clock::time_point start) {
    const SpeculativeOptions& o = *request.speculative;
    const int32_t nCtx = contextLength();
    const size_t vocab = size_t(hparams().nVocab);
    auto target = SamplerChain::create(request.sampler);
    if (!target) return std::unexpected(target.error());
    SamplerParams draftParams = o.draftSampler.value_or(request.sampler);
    draftParams.seed = request.sampler.seed ^ 0x9e3779b97f4a7c15ull;  // the drafter's draws, apart from the model's
    draftParams.topN = 0;
    auto drafter = SamplerChain::create(draftParams);
    if (!drafter) return std::unexpected(drafter.error());
    Engine* draftEngine = o.source == DraftSource::Model ? o.draftModel : nullptr;
    StopStringMatcher stops(request.stopStrings);
    KvCache& cache = context_->cache();

    // One emitted token: its record, then the stop conditions. True: generation ends here.
    auto emit = [&](StepRecord rec) {
        const int32_t id = rec.sample.id;
        rec.step = summary.nGenerated;
        rec.position = int32_t(sequence.size());
        rec.endOfGeneration = tokenizer_->isEndOfGeneration(id) || id == tokenizer_->bosId();
        rec.piece = rec.endOfGeneration ? std::string() : tokenizer_->tokenBytes(id);
        if (rec.step == 0) summary.timeToFirstTokenUs = usSince(start);
        sequence.push_back(id);
        summary.tokens.push_back(id);
        summary.text += rec.piece;
        summary.nGenerated += 1;
        const bool eog = rec.endOfGeneration;
        if (observer) observer->onStep(rec);
        if (eog) {
            summary.reason = FinishReason::EndOfGeneration;
            return true;
        }
        if (auto at = stops.find(summary.text)) {
            summary.text.resize(*at);
            summary.reason = FinishReason::StopString;
            return true;
        }
        if (summary.nGenerated >= request.maxTokens) {
            summary.reason = FinishReason::MaxTokens;
            return true;
        }
        if (int32_t(sequence.size()) > nCtx) {
            summary.reason = FinishReason::ContextFull;
            return true;
        }
        return false;
    };
    auto recordFor = [&](std::span<const float> logits, int32_t id) -> Result<StepRecord> {
        StepRecord rec;
        keepRequestedLogits(logits, request, rec);
        auto described = target->describe(logits, sequence, id);
        if (!described) return std::unexpected(Error{ErrorKind::Device, "the model produced invalid logits: " + described.error().message});
        rec.sample = std::move(*described);
        return rec;
    };

    // The first token, from the prefill's logits, as plain decoding draws it.
    {
        const auto t0 = Clock::now();
        StepRecord rec;
        keepRequestedLogits(prefillLogits, request, rec);
        auto sample = target->sample(prefillLogits, sequence);
        if (!sample) return std::unexpected(Error{ErrorKind::Device, "the model produced invalid logits: " + sample.error().message});
        rec.sample = std::move(*sample);
        rec.sampleUs = usSince(t0);
        if (emit(std::move(rec))) {
            summary.kv = cache.stats();
            if (observer) observer->onFinish(summary);
            return summary;
        }
    }

    std::vector<float> rows, draftRows;
    std::vector<int32_t> draft;
    std::vector<std::vector<TokenProbability>> q;  // the drafter's distribution for each drafted token
    for (;;) {
        if (cancel && cancel()) {
            summary.reason = FinishReason::Cancelled;
            break;
        }
        // The model's cache holds everything but the last token (pending); the round verifies it and the draft.
        const int32_t pendingPos = int32_t(sequence.size()) - 1;
        truncate(pendingPos);
        const int32_t room = std::min(request.maxTokens - summary.nGenerated - 1, nCtx - int32_t(sequence.size()));
        const int32_t k = std::min(o.maxDraft, room);

        // ---- draft -----------------------------------------------------------------------------
        auto t0 = Clock::now();
        draft.clear();
        q.clear();
        if (k > 0 && !draftEngine) {
            draft = ngramDraft(sequence, o, k);
            for (int32_t id : draft) q.push_back({{id, 1.0}});
        } else if (k > 0) {
            Engine& d = *draftEngine;
            d.device_->bindThreads();
            // Bring the drafter's cache to the sequence (it keeps what it shares), then run its end.
            const int32_t shared = std::min<int32_t>(int32_t(commonPrefixLength(d.cachedTokens_, sequence)), int32_t(sequence.size()) - 1);
            const int32_t draftRoom = d.contextLength() - int32_t(sequence.size());
            if (draftRoom > 0) {
                d.truncate(shared);
                std::span<const float> dl = d.runBatched(sequence, shared, int32_t(sequence.size()));
                std::vector<int32_t> recent = sequence;
                for (int32_t i = 0; i < std::min(k, draftRoom); ++i) {
                    auto dist = drafter->finalDistribution(dl, recent);
                    if (!dist) return std::unexpected(Error{ErrorKind::Device, "the draft model produced invalid logits: " + dist.error().message});
                    const int32_t id = draftParams.temperature == 0.0f ? dist->front().id : drawFrom(*dist, drafter->uniform());
                    // The drafter is unsure (its raw probability: speculative.h): stop here.
                    if (o.pMin > 0.0f && i >= o.minDraft && std::exp(double(dl[size_t(id)]) - logSumExp(dl)) < double(o.pMin)) break;
                    draft.push_back(id);
                    q.push_back(std::move(*dist));
                    recent.push_back(id);
                    if (i + 1 < std::min(k, draftRoom)) dl = d.runBatched(recent, int32_t(recent.size()) - 1, int32_t(sequence.size()));
                }
                if (auto ok = d.checkModelFile(); !ok) return std::unexpected(Error{ok.error().kind, "draft model: " + ok.error().message});
            }
            device_->bindThreads();
        }
        const int64_t draftUs = usSince(t0);

        // ---- verify: the pending token and the draft, a few rows a pass --------------------------
        t0 = Clock::now();
        std::vector<int32_t> verify{sequence.back()};
        verify.insert(verify.end(), draft.begin(), draft.end());
        rows.resize(verify.size() * vocab);
        // Passes of exactDecodeRows() rows (4; 2 where a K-quant matrix's kernel associates its
        // sums differently from 3 rows on): each row computed as a one-token step computes it.
        const size_t passRows = size_t(model_->exactDecodeRows());
        for (size_t from = 0; from < verify.size(); from += passRows) {
            const size_t count = std::min<size_t>(passRows, verify.size() - from);
            runPass(*context_, std::span(verify).subspan(from, count), pendingPos + int32_t(from), CellOrigin::Generated, nullptr,
                            rows.data() + from * vocab);
            cachedTokens_.insert(cachedTokens_.end(), verify.begin() + ptrdiff_t(from), verify.begin() + ptrdiff_t(from + count));
            summary.nDecodePasses += 1;
        }
        if (auto ok = checkModelFile(); !ok) return std::unexpected(ok.error());
        const int64_t verifyUs = usSince(t0);
        summary.decodeUs += draftUs + verifyUs;
        summary.draftUs += draftUs;
        summary.draftN += int32_t(draft.size());

        // ---- accept, correct or add a bonus ------------------------------------------------------
        auto row = [&](size_t i) { return std::span<const float>(rows.data() + i * vocab, vocab); };
        bool stopped = false;
        size_t accepted = 0;
        auto roundInfo = [&](DraftRecord& info, size_t index) {
            info.draftIndex = int32_t(index);
            info.draftLength = int32_t(draft.size());
            if (index == 0) {
                info.draftUs = draftUs;
                info.verifyUs = verifyUs;
                info.verifyRows = int32_t(verify.size());
            }
        };
        for (; accepted < draft.size() && !stopped; ++accepted) {
            const int32_t drafted = draft[accepted];
            auto p = target->finalDistribution(row(accepted), sequence);
            if (!p) return std::unexpected(Error{ErrorKind::Device, "the model produced invalid logits: " + p.error().message});
            SpeculativeChoice choice;
            if (request.sampler.temperature == 0.0f) {  // greedy: the model's top token, drafted or not
                choice = chooseSpeculative(*p, q[accepted], drafted, 1.0, 0.0);
                choice.accepted = drafted == p->front().id;
                choice.token = p->front().id;
            } else {
                const double uAccept = target->uniform(), uCorrect = target->uniform();
                choice = chooseSpeculative(*p, q[accepted], drafted, uAccept, uCorrect);
            }
            const bool accept = choice.accepted;
            const int32_t id = choice.token;
            auto info = std::make_shared<DraftRecord>();
            info->draftedId = drafted;
            info->q = float(choice.q);
            info->p = float(choice.p);
            info->acceptProbability = float(choice.acceptProbability);
            info->fate = accept ? DraftRecord::Fate::Accepted : DraftRecord::Fate::Corrected;
            describeDraftedPosition(*p, q[accepted], !accept, *info);
            roundInfo(*info, accepted);
            if (accept) summary.draftAccepted += 1;
            auto rec = recordFor(row(accepted), id);
            if (!rec) return std::unexpected(rec.error());
            rec->draft = info;
            rec->forwardUs = accepted == 0 ? verifyUs : 0;
            summary.decodedTokens += 1;
            stopped = emit(std::move(*rec));
            if (!accept) break;
        }
        if (!stopped && accepted == draft.size()) {  // every drafted token accepted: one more from the model
            const auto tSample = Clock::now();
            StepRecord rec;
            keepRequestedLogits(row(draft.size()), request, rec);
            auto sample = target->sample(row(draft.size()), sequence);
            if (!sample) return std::unexpected(Error{ErrorKind::Device, "the model produced invalid logits: " + sample.error().message});
            rec.sample = std::move(*sample);
            rec.sampleUs = usSince(tSample);
            rec.forwardUs = draft.empty() ? verifyUs : 0;
            auto info = std::make_shared<DraftRecord>();
            info->fate = draft.empty() ? DraftRecord::Fate::Undrafted : DraftRecord::Fate::Bonus;
            roundInfo(*info, draft.size());
            rec.draft = info;
            summary.decodedTokens += 1;
            stopped = emit(std::move(rec));
        }
        if (observer) observer->onKvCache(cache.stats());
        if (stopped) break;
    }
    // As plain decoding leaves it: the cache holds the sequence but its last token.
    truncate(int32_t(sequence.size()) - 1);
    summary.kv = cache.stats();
    if (observer) observer->onFinish(summary);
    return summary;
}

}  // namespace inferscope
