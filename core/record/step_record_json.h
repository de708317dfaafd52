#pragma once
// One generated token's StepRecord as a JSON object: the one schema of step records wherever they
// leave the program, the CLI's `generate --json` token events and the app's conversation export
// ("token_records", gui/chat_store_export.cpp).
//
//   {step, position, id, piece, piece_bytes?, p (raw softmax), p_final (as drawn), logit, rank,
//    entropy_bits, log_sum_exp, survivors: {stage: n}, forward_us, sample_us, end_of_generation,
//    top: [{id, piece?, piece_bytes?, logit, p (raw), stages: {raw, penalty, top-k, top-p, min-p,
//           temperature}}]}   (top-N by logit, descending)
//
// A piece whose bytes are not whole UTF-8 (part of a character) also has "piece_bytes", its bytes
// in hex ("e2 80"); dump such an object with nlohmann's error_handler_t::replace, which writes
// U+FFFD for the bytes that are not UTF-8. A top candidate's piece is given when `pieceOf` knows
// it. Floats are the shortest decimal that reads back as the same float (0.1, not
// 0.100000001490116); a non-finite one is null.

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "record/step_record.h"

namespace inferscope {

using StepPieceLookup = std::function<std::optional<std::string>(int32_t id)>;

nlohmann::ordered_json stepRecordJson(const StepRecord& step, const StepPieceLookup& pieceOf = {});

}  // namespace inferscope
