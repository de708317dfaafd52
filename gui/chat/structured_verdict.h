#pragma once
// An answer asked to be structured (its origin's StructuredConstraint) checked against what it was
// asked to be, as the message shows it under the text (ChatModel's `structured` role):
//   kind       "json", "json_schema", "gbnf" ("" for an answer asked nothing: nothing shown)
//   verdict    "valid", "refused", "incomplete", "unchecked"
//   summary    one sentence for the message's footer
//   formatted  valid JSON indented (keys in the answer's order), "" otherwise
// The bytes checked are those the sampler matched: the answer's token pieces in order (the text
// when an answer has no steps).

#include <QVariantMap>

namespace inferscope {

struct ChatMessage;

QVariantMap structuredVerdict(const ChatMessage& m);

}  // namespace inferscope
