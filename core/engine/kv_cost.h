#pragma once
// What a KV cache type costs in quality on one sequence: the sequence teacher-forced through a
// cache of the reference type and one of the tested type at once (Engine::scoreWithKvTypes), and
// for each compared token the shift of the distribution it was predicted from — KL(P_ref ‖ P_test)
// and whether both rank the same token first (perplexity.h, the figures `inferscope-cli
// perplexity --kv T --compare-to-kv R` reports). The app's "What q8_0 costs" runs the current
// answer through it.

#include <atomic>
#include <cstdint>
#include <span>
#include <vector>

#include "common/error.h"
#include "engine/engine.h"
#include "engine/perplexity.h"

namespace inferscope {

struct KvCost {
    KvType reference = KvType::F32;
    KvType test = KvType::Q8_0;
    int32_t firstToken = 0;                   // position of the first compared token
    std::vector<DistributionShift> perToken;  // [i]: the distributions that predicted token firstToken + i
    double meanKl = 0.0;                      // nats
    double p99Kl = 0.0;
    double maxKl = 0.0;
    int64_t sameTop1 = 0;
    double top1Agreement = 1.0;
};

// tokens: the whole sequence (prompt and answer); firstToken ≥ 1: the tokens compared are
// firstToken .. end (each from the logits of the position before it). Errors: those of
// scoreWithKvTypes, InvalidArgument for firstToken outside 1 .. tokens.size() − 1.
Result<KvCost> measureKvCost(Engine& engine, std::span<const int32_t> tokens, int32_t firstToken, KvType reference, KvType test,
                             const CancelCheck& cancel = {});

}  // namespace inferscope
