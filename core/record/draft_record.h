#pragma once
// A token's fate under speculative decoding, as a step record carries it (StepRecord::draft).

#include <cstddef>
#include <cstdint>
#include <vector>

namespace inferscope {

// One token of a drafted position as both sides saw it: the model's probability p and the
// drafter's q, each in its final distribution (the sampler's stages applied, as drawn from).
struct DraftCandidate {
    int32_t id = 0;
    float p = 0.0f;
    float q = 0.0f;
};

// One entry of the residual distribution normalize(max(0, p − q)) a correction was drawn from.
struct DraftResidual {
    int32_t id = 0;
    float r = 0.0f;  // its probability in the residual, normalised
};

// What happened to a token under speculative decoding (StepRecord::draft).
struct DraftRecord {
    enum class Fate : uint8_t {
        Accepted,   // drafted and accepted
        Corrected,  // drafted token rejected; this token drawn from max(0, p − q) instead
        Bonus,      // every drafted token accepted: this one drawn from p after them
        Undrafted,  // no draft this round (none found, or no room): a plain decode step
    };
    Fate fate = Fate::Undrafted;
    int32_t draftedId = -1;         // the drafted token (Accepted: this token; Corrected: the rejected one)
    float q = 0.0f;                 // the drafter's probability of draftedId (n-gram: 1)
    float p = 0.0f;                 // the model's probability of draftedId
    float acceptProbability = 0.0f; // min(1, p / q)
    int32_t draftIndex = 0;         // its place in the round's draft (0-based)
    int32_t draftLength = 0;        // tokens drafted that round
    // The round's costs, on its first token only (0 on the others).
    int64_t draftUs = 0, verifyUs = 0;
    int32_t verifyRows = 0;         // tokens the round's verification ran (the pending one and the draft)
    // Drafted tokens (Accepted, Corrected) only; empty in records stored before ISR5.
    // The position's leading candidates: the model's most probable tokens and the drafter's, at most
    // kDraftCandidates, by max(p, q), descending (ties: the lower id first).
    std::vector<DraftCandidate> candidates;
    // Corrected: the residual's most probable entries (at most kDraftResidual), descending, and the
    // mass it had before normalising, Σ max(0, p − q) (the total variation distance of p and q).
    std::vector<DraftResidual> residual;
    float residualMass = 0.0f;
};

// "accepted", "corrected", "bonus" or "undrafted": the fate's name wherever records leave the program.
inline const char* draftFateName(DraftRecord::Fate fate) {
    switch (fate) {
        case DraftRecord::Fate::Accepted: return "accepted";
        case DraftRecord::Fate::Corrected: return "corrected";
        case DraftRecord::Fate::Bonus: return "bonus";
        case DraftRecord::Fate::Undrafted: break;
    }
    return "undrafted";
}

inline constexpr size_t kDraftCandidates = 8;
inline constexpr size_t kDraftResidual = 5;

}  // namespace inferscope
