#pragma once
// A compact, versioned binary form of a generation's step records, so a stored answer keeps
// everything the visualizer shows about each token (probabilities, stages, top-N, timings).
// Little-endian; decoding validates every length against the buffer (stored data is untrusted).
//
//   "ISR3" u32 count, then per step:
//     i32 step, i32 position, i32 id, f32 logit, f32 pRaw, f32 pFinal, i32 rank, f32 entropyBits,
//     f32 logSumExp, i32 survivors[7], u8 constrained, f32 grammarMassRemoved, f32 pBeforeGrammar,
//     i64 forwardUs, i64 sampleUs, u8 endOfGeneration,
//     u16 pieceBytes, piece, u16 nTop, nTop × (i32 id, f32 logit, f32 p[7]),
//     u32 nReplay, nReplay × i32 id, nReplay × f32 logit
// "ISR4" (written when any step has a draft record: speculative decoding) is ISR3 with, after each
// step's replay logits, u8 hasDraft and if 1: u8 fate, i32 draftedId, f32 q, f32 p,
// f32 acceptProbability, i32 draftIndex, i32 draftLength, i64 draftUs, i64 verifyUs, i32 verifyRows.
// "ISR5" (written now instead of ISR4) adds to each draft record: u8 nCandidates (≤ 8),
// nCandidates × (i32 id, f32 p, f32 q), u8 nResidual (≤ 5), nResidual × (i32 id, f32 r),
// f32 residualMass (DraftRecord::candidates, residual). ISR4 still decodes, without them.
// Without drafts it writes ISR3, which releases before ISR4 read.
// "ISR2" has six stages (no grammar: its survivors and probabilities are the penalty's on
// decoding) and no grammar fields; "ISR1" has no replay logits either. Both still decode.

#include <cstdint>
#include <span>
#include <vector>

#include "common/error.h"
#include "record/step_record.h"

namespace inferscope {

std::vector<uint8_t> encodeStepRecords(std::span<const StepRecord> steps);
Result<std::vector<StepRecord>> decodeStepRecords(std::span<const uint8_t> bytes);

}  // namespace inferscope
