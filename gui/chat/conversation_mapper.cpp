#include "chat/conversation_mapper.h"

#include <algorithm>

#include "store/answer_origin_json.h"
#include "record/step_record_codec.h"

namespace inferscope::ConversationMapper {

QByteArray encodeSteps(const std::vector<StepRecord>& steps) {
    if (steps.empty()) return {};
    const auto bytes = encodeStepRecords(steps);
    return QByteArray(reinterpret_cast<const char*>(bytes.data()), qsizetype(bytes.size()));
}

std::vector<StepRecord> decodeSteps(const QByteArray& records) {
    if (records.isEmpty()) return {};
    auto steps = decodeStepRecords(std::span(reinterpret_cast<const uint8_t*>(records.constData()), size_t(records.size())));
    return steps ? std::move(*steps) : std::vector<StepRecord>{};
}

namespace {

AnswerOrigin originOf(const QJsonObject& stored, const AnswerStats& stats, const std::vector<StepRecord>& steps) {
    AnswerOrigin origin = originFromJson(stored);
    if (origin.known()) return origin;
    // Stored before answers kept their origin: what the stats name, and the picks' own bytes
    // (the candidates' texts were never kept).
    origin = originOfLegacy(stats);
    for (const StepRecord& s : steps)
        if (!s.piece.empty()) origin.tokens.emplace(s.sample.id, TokenText{s.piece, {}});
    return origin;
}

}  // namespace

StoredRow toStored(const ChatMessage& m, qint64 conversationId, int position) {
    StoredRow row;
    StoredMessage& s = row.message;
    s.conversationId = conversationId;
    s.position = position;
    s.role = roleName(m.role);
    s.content = m.text;
    s.finishReason = finishName(m.finishReason);
    s.stats = m.stats.toJson();
    s.tokens = QVector<qint32>(m.tokens.begin(), m.tokens.end());
    s.tokenRecords = encodeSteps(m.steps);
    if (m.role == Message::Assistant) s.origin = originToJson(m.origin);
    // An answer with versions: the shown one is the row (fields mirrored in m), the others go with it.
    if (m.variants.size() > 1) {
        s.versionIndex = m.activeVariant;
        for (size_t i = 0; i < m.variants.size(); ++i) {
            if (int(i) == m.activeVariant) continue;
            const AnswerVariant& v = m.variants[i];
            row.otherVersions.append({int(i), v.text, finishName(v.finishReason), v.stats.toJson(),
                                      QVector<qint32>(v.tokens.begin(), v.tokens.end()), encodeSteps(v.steps),
                                      originToJson(v.origin)});
        }
    }
    return row;
}

ChatMessage fromStored(const StoredMessage& s, const QList<StoredVersion>& versions, bool keepTokens) {
    ChatMessage m;
    m.storeId = s.id;
    m.role = roleFromName(s.role);
    m.text = s.content;
    m.finishReason = finishFromName(s.finishReason);
    m.stats = AnswerStats::fromJson(s.stats);
    if (keepTokens) m.tokens.assign(s.tokens.begin(), s.tokens.end());
    m.steps = decodeSteps(s.tokenRecords);
    if (m.role == Message::Assistant) m.origin = originOf(s.origin, m.stats, m.steps);
    if (s.versionCount <= 1) return m;
    // Every version in index order, the shown one (mirrored above) at its place.
    std::vector<std::pair<int, AnswerVariant>> all{{s.versionIndex, m.shownVariant()}};
    for (const StoredVersion& v : versions) {
        AnswerVariant variant{v.content, finishFromName(v.finishReason), AnswerStats::fromJson(v.stats), {}, decodeSteps(v.tokenRecords), {}};
        variant.origin = originOf(v.origin, variant.stats, variant.steps);
        if (keepTokens) variant.tokens.assign(v.tokens.begin(), v.tokens.end());
        all.emplace_back(v.index, std::move(variant));
    }
    std::stable_sort(all.begin(), all.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    if (all.size() > 1) {
        for (auto& [index, variant] : all) {
            if (index == s.versionIndex) m.activeVariant = int(m.variants.size());
            m.variants.push_back(std::move(variant));
        }
    }
    return m;
}

}  // namespace inferscope::ConversationMapper
