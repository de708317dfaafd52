#pragma once
// A compact, versioned binary form of a generation's step records, so a stored answer keeps
// everything the visualizer shows about each token (probabilities, stages, top-N, timings).
// Little-endian; decoding validates every length against the buffer (stored data is untrusted).
//
//   "ISR2" u32 count, then per step:
//     i32 step, i32 position, i32 id, f32 logit, f32 pRaw, f32 pFinal, i32 rank, f32 entropyBits,
//     f32 logSumExp, i32 survivors[6], i64 forwardUs, i64 sampleUs, u8 endOfGeneration,
//     u16 pieceBytes, piece, u16 nTop, nTop × (i32 id, f32 logit, f32 p[6]),
//     u32 nReplay, nReplay × i32 id, nReplay × f32 logit
// "ISR1" (the first version) has no replay logits; it still decodes.

#include <cstdint>
#include <span>
#include <vector>

#include "common/error.h"
#include "record/step_record.h"

namespace inferscope {

std::vector<uint8_t> encodeStepRecords(std::span<const StepRecord> steps);
Result<std::vector<StepRecord>> decodeStepRecords(std::span<const uint8_t> bytes);

}  // namespace inferscope
