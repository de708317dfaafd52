#pragma once
// `generate --json --lens` and `--attention-at STEP`: a step's inspection (engine/inspection.h) as
// JSON, for scripting and tests.
//
// --lens adds to every token event
//   "lens": {"first_top1_layer": L, "settled_layer": L,
//            "layers": [{"layer": l, "residual_norm": x, "entropy_bits": e,
//                        "top": [{"id", "piece", "logit", "p"}, ...]}, ...]}
// --attention-at STEP prints after that step's token event
//   {"event": "attention", "step", "position", "token", "n_layer", "n_head", "n_head_kv",
//    "kv_head": [per query head], "window": [per layer, 0 = global], "tokens": [ids at 0 .. position],
//    "weights": [layer][head][key position]}

#include <nlohmann/json.hpp>

#include <cstdint>
#include <span>

#include "engine/generation.h"
#include "tokenizer/tokenizer.h"

namespace inferscope::cli {

nlohmann::ordered_json lensJson(const LogitLens& lens, const Tokenizer& tokenizer);
// `tokens`: the sequence up to and including the inspected position.
nlohmann::ordered_json attentionEventJson(const StepRecord& step, const AttentionMap& attention, std::span<const int32_t> tokens);

}  // namespace inferscope::cli
