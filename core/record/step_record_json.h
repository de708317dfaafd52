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

// A token's speculative-decoding record (StepRecord::draft), the "speculative" object of the CLI's
// token events and of the app's export:
//
//   {fate, drafted, accepted, corrected,
//    [drafted:]   draft_id, draft_piece?, q, p, accept_probability, draft_index, draft_length,
//                 candidates: [{id, p, q, piece?}]          (the position's leading candidates)
//    [corrected:] residual: [{id, r, piece?}], residual_mass (normalize(max(0, p − q)) drawn from)
//    [a round's first token:] draft_ms, verify_ms, verify_rows}
nlohmann::ordered_json draftRecordJson(const DraftRecord& draft, const StepPieceLookup& pieceOf = {});

}  // namespace inferscope
