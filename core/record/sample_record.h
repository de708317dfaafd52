#pragma once
// What one sampling step reports: plain values that the engine's observer, the CLI's JSON and the
// GUI's Probabilities panel (funnel view, replay) consume. Only the top-N candidates are copied out;
// the full vocabulary never leaves the sampler.

#include <array>
#include <cstdint>
#include <string_view>
#include <vector>

namespace inferscope {

// The chain's stages in the order they run. A candidate's probability "after stage s" is the
// softmax over the tokens that survived s: at T = 1 for Raw..MinP, at the temperature for
// Temperature (the distribution actually sampled; greedy: 1 for the pick, 0 elsewhere).
// Grammar keeps the tokens a grammar allows next (sampler_chain.h); without one it keeps all.
enum class SamplerStage : uint8_t { Raw, Penalty, Grammar, TopK, TopP, MinP, Temperature };
inline constexpr int kSamplerStageCount = 7;

// Lower-case display names, also usable as JSON keys: "raw", "penalty", "grammar", "top-k",
// "top-p", "min-p", "temperature".
constexpr std::string_view samplerStageName(SamplerStage stage) {
    constexpr std::array<std::string_view, kSamplerStageCount> names{
        "raw", "penalty", "grammar", "top-k", "top-p", "min-p", "temperature"};
    return names[static_cast<size_t>(stage)];
}

struct CandidateRecord {
    int32_t id = 0;
    float logit = 0;                              // raw, as the model produced it
    std::array<float, kSamplerStageCount> p{};    // probability after each stage; 0 once removed
};

// A survivor of every stage and its probability in the distribution drawn from.
struct FinalCandidate {
    int32_t id = 0;
    float p = 0;
};

struct SampleRecord {
    int32_t id = 0;            // the chosen token
    float logit = 0;           // its raw logit
    float pRaw = 0;            // its softmax at T = 1 over every candidate given, before any stage
    float pFinal = 0;          // its probability in the distribution it was drawn from
    int32_t rank = 0;          // 1 = the highest raw logit (ties: lower id first)
    float entropyBits = 0;     // of the raw distribution
    float logSumExp = 0;       // of the raw logits: p = exp(logit - logSumExp) for any stored logit
    std::array<int32_t, kSamplerStageCount> survivors{};  // candidates left after each stage
    // The grammar stage (when a mask was given): the probability mass it removed (after the
    // penalty, T = 1) and the chosen token's probability just before it, the "fight meter": a
    // low value means the model wanted something the grammar forbids. Forced: one candidate left.
    bool constrained = false;
    float grammarMassRemoved = 0;
    float pBeforeGrammar = 0;
    bool forced() const { return constrained && survivors[size_t(SamplerStage::Grammar)] == 1; }
    std::vector<CandidateRecord> top;  // min(topN, n) highest raw logits, descending (ties: lower id)
    // SamplerParams::finalTopN survivors of the last stage with the highest final probability,
    // descending (ties: lower id); greedy: the pick alone at 1. Live only (not stored).
    std::vector<FinalCandidate> finalTop;
};

}  // namespace inferscope
