#pragma once
// An answer's origin (core/record/answer_origin.h) as the store keeps it: a JSON object in the
// messages' and versions' `origin` column, and in the conversation export. Token bytes are base64
// (a token may be part of a UTF-8 character). An empty object is an answer stored before origins
// were kept: the conversation's mapper then infers what the answer's stats say (chat/answer_stats.h's
// `originOfLegacy`).

#include <QJsonObject>

#include "record/answer_origin.h"

namespace inferscope {

// {"backend": "local", "model_file", "model_name", "vocabulary_hash" (16 hex digits),
//  "vocabulary_size", "server_url", "stages_reported", "device", "kv_type", "kv_bytes_per_token", "kv_bytes_reserved",
//  "context_length", "pass_cost": {"weight_bytes_per_token", "kv_bytes_per_token", "macs_per_token",
//  "lm_head_macs", "attention_flops_per_key"}, "timed_by": "engine" | "client", "tokens": {"<id>": "<base64 bytes>"},
//  "labels": {"<id>": "</s>"}}; only what is known. Unknown origin: {}.
QJsonObject originToJson(const AnswerOrigin& origin);
// Reads any subset; `{}` (or not an object's fields) gives an Unknown origin.
AnswerOrigin originFromJson(const QJsonObject& json);

}  // namespace inferscope
