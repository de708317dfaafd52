#pragma once
// ConversationMapper: the open conversation's rows (ChatMessage, what the window shows and the
// prompt is built from) to and from the ChatStore's rows (StoredMessage and the answer's other
// StoredVersions). Pure conversions: what is saved and what is read back are the same message,
// its versions in index order, its steps through the step-record codec.

#include <QList>

#include "chat/chat_model.h"
#include "store/chat_store.h"

namespace inferscope {

// A message as the store takes it: the row (the version shown) and the answer's other versions.
struct StoredRow {
    StoredMessage message;
    QList<StoredVersion> otherVersions;
};

namespace ConversationMapper {

// `m` as row `position` of conversation `conversationId`.
StoredRow toStored(const ChatMessage& m, qint64 conversationId, int position);
// A stored row back as a message; `versions`: ChatStore::versions(s.id) when s.versionCount > 1.
// keepTokens: the conversation's tokens belong to the loaded model (else they are re-made from the text).
ChatMessage fromStored(const StoredMessage& s, const QList<StoredVersion>& versions, bool keepTokens);

// Steps as stored (core/record/step_record_codec.h); undecodable records read back as none.
QByteArray encodeSteps(const std::vector<StepRecord>& steps);
std::vector<StepRecord> decodeSteps(const QByteArray& records);

}  // namespace ConversationMapper
}  // namespace inferscope
