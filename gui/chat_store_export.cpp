// Exports of one conversation, written atomically (QSaveFile).
//
// Markdown:
//   # <title>
//
//   Model: <model> · Mode: <mode> (template <name>) · Created: yyyy-MM-dd HH:mm UTC
//
//   > **System prompt:** <text, each line quoted>
//
//   ## User | ## Assistant | ## System       one per message, its text verbatim
//
//   `finish: eos · decode_tps: 41.2 · …`     assistant: finish reason and stats (nested keys dotted)
//
// JSON ("format": "inferscope.conversation", "format_version": 1): the conversation's fields and
// every message's (snake_case keys, times UTC ISO-8601 with milliseconds), plus for a message
// with token records "token_records": one object per generated token
//   {step, position, id, piece, p (raw softmax), p_final (as drawn), logit, rank, entropy_bits,
//    log_sum_exp, survivors: {stage: n}, forward_us, sample_us, end_of_generation,
//    top: [{id, piece?, logit, p (raw), stages: {raw, penalty, top-k, top-p, min-p, temperature}}]}
// A piece that is not whole UTF-8 (part of a character) also has "piece_bytes" in hex. Pieces of
// top candidates are not stored; "piece" is given where the conversation itself produced that id.
// Records that do not decode give "token_records_error" with the decoder's message instead.
#include <QJsonArray>
#include <QJsonDocument>
#include <QSaveFile>
#include <charconv>
#include <cmath>
#include <string>
#include <unordered_map>

#include "chat_store_sql.h"
#include "engine/step_record_codec.h"

namespace inferscope {

using namespace store;

namespace {

// The shortest decimal that reads back as the same float (0.1f -> 0.1, not 0.100000001490116).
QJsonValue jsonFloat(float value) {
    if (!std::isfinite(value)) return QJsonValue::Null;
    char buffer[32];
    const auto end = std::to_chars(buffer, buffer + sizeof buffer, value).ptr;
    return std::strtod(std::string(buffer, end).c_str(), nullptr);
}

QString statValue(const QJsonValue& value) {
    if (value.isDouble()) return QString::number(value.toDouble(), 'g', 6);
    if (value.isString()) return value.toString();
    if (value.isBool()) return value.toBool() ? QStringLiteral("true") : QStringLiteral("false");
    if (value.isArray()) return QString::fromUtf8(QJsonDocument(value.toArray()).toJson(QJsonDocument::Compact));
    return QStringLiteral("null");
}

void flattenStats(const QJsonObject& object, const QString& prefix, QStringList& out) {
    for (auto it = object.begin(); it != object.end(); ++it) {
        if (it.value().isObject()) flattenStats(it.value().toObject(), prefix + it.key() + QLatin1Char('.'), out);
        else out << prefix + it.key() + QStringLiteral(": ") + statValue(it.value());
    }
}

QString roleHeading(const QString& role) {
    return role.isEmpty() ? QStringLiteral("Message") : role.left(1).toUpper() + role.mid(1);
}

using PieceMap = std::unordered_map<int32_t, std::string>;

void putPiece(QJsonObject& object, const std::string& piece) {
    const QByteArray bytes = QByteArray::fromStdString(piece);
    const QString text = QString::fromUtf8(bytes);
    object[QStringLiteral("piece")] = text;
    if (text.toUtf8() != bytes) object[QStringLiteral("piece_bytes")] = QString::fromLatin1(bytes.toHex(' '));
}

QJsonObject stepJson(const StepRecord& step, const PieceMap& pieces) {
    const SampleRecord& s = step.sample;
    QJsonObject o;
    o[QStringLiteral("step")] = step.step;
    o[QStringLiteral("position")] = step.position;
    o[QStringLiteral("id")] = s.id;
    putPiece(o, step.piece);
    o[QStringLiteral("p")] = jsonFloat(s.pRaw);
    o[QStringLiteral("p_final")] = jsonFloat(s.pFinal);
    o[QStringLiteral("logit")] = jsonFloat(s.logit);
    o[QStringLiteral("rank")] = s.rank;
    o[QStringLiteral("entropy_bits")] = jsonFloat(s.entropyBits);
    o[QStringLiteral("log_sum_exp")] = jsonFloat(s.logSumExp);
    QJsonObject survivors;
    for (int i = 0; i < kSamplerStageCount; ++i)
        survivors[QString::fromUtf8(samplerStageName(SamplerStage(i)))] = s.survivors[size_t(i)];
    o[QStringLiteral("survivors")] = survivors;
    o[QStringLiteral("forward_us")] = qint64(step.forwardUs);
    o[QStringLiteral("sample_us")] = qint64(step.sampleUs);
    o[QStringLiteral("end_of_generation")] = step.endOfGeneration;
    QJsonArray top;
    for (const CandidateRecord& c : s.top) {
        QJsonObject candidate;
        candidate[QStringLiteral("id")] = c.id;
        if (const auto it = pieces.find(c.id); it != pieces.end()) putPiece(candidate, it->second);
        candidate[QStringLiteral("logit")] = jsonFloat(c.logit);
        candidate[QStringLiteral("p")] = jsonFloat(c.p[size_t(SamplerStage::Raw)]);
        QJsonObject stages;
        for (int i = 0; i < kSamplerStageCount; ++i)
            stages[QString::fromUtf8(samplerStageName(SamplerStage(i)))] = jsonFloat(c.p[size_t(i)]);
        candidate[QStringLiteral("stages")] = stages;
        top.append(candidate);
    }
    o[QStringLiteral("top")] = top;
    return o;
}

Result<std::vector<StepRecord>> decode(const QByteArray& records) {
    return decodeStepRecords({reinterpret_cast<const uint8_t*>(records.constData()), size_t(records.size())});
}

}  // namespace

QString ChatStore::toMarkdown(const StoredConversation& c, const QList<StoredMessage>& messages) {
    QString md = QStringLiteral("# ") + (c.title.trimmed().isEmpty() ? QStringLiteral("Untitled conversation") : c.title.trimmed()) +
                 QStringLiteral("\n\n");
    QStringList facts;
    if (!c.modelName.isEmpty()) facts << QStringLiteral("Model: ") + c.modelName;
    if (!c.mode.isEmpty())
        facts << QStringLiteral("Mode: ") + c.mode +
                     (c.templateName.isEmpty() ? QString() : QStringLiteral(" (template %1)").arg(c.templateName));
    if (c.createdAt.isValid())
        facts << QStringLiteral("Created: ") + c.createdAt.toUTC().toString(QStringLiteral("yyyy-MM-dd HH:mm")) +
                     QStringLiteral(" UTC");
    if (!facts.isEmpty()) md += facts.join(QStringLiteral(" · ")) + QStringLiteral("\n\n");
    if (!c.systemPrompt.trimmed().isEmpty()) {
        const QStringList lines = c.systemPrompt.trimmed().split(QLatin1Char('\n'));
        md += QStringLiteral("> **System prompt:** ") + lines.first() + QLatin1Char('\n');
        for (qsizetype i = 1; i < lines.size(); ++i) md += QStringLiteral("> ") + lines[i] + QLatin1Char('\n');
        md += QLatin1Char('\n');
    }
    for (const StoredMessage& m : messages) {
        md += QStringLiteral("## ") + roleHeading(m.role) + QStringLiteral("\n\n");
        QString content = m.content;
        while (content.endsWith(QLatin1Char('\n'))) content.chop(1);
        md += content + QStringLiteral("\n\n");
        QStringList stats;
        if (!m.finishReason.isEmpty()) stats << QStringLiteral("finish: ") + m.finishReason;
        flattenStats(m.stats, {}, stats);
        if (!stats.isEmpty()) md += QLatin1Char('`') + stats.join(QStringLiteral(" · ")) + QStringLiteral("`\n\n");
    }
    md.chop(1);  // one newline at the end
    return md;
}

QByteArray ChatStore::toJson(const StoredConversation& c, const QList<StoredMessage>& messages) {
    PieceMap pieces;  // every id this conversation produced, for naming top candidates
    QList<Result<std::vector<StepRecord>>> decoded;
    for (const StoredMessage& m : messages) {
        decoded.append(m.tokenRecords.isEmpty() ? Result<std::vector<StepRecord>>{} : decode(m.tokenRecords));
        if (decoded.last())
            for (const StepRecord& step : *decoded.last()) pieces.emplace(step.sample.id, step.piece);
    }
    QJsonObject conversation{
        {QStringLiteral("id"), c.id},
        {QStringLiteral("title"), c.title},
        {QStringLiteral("created_at"), toStoredTime(c.createdAt)},
        {QStringLiteral("updated_at"), toStoredTime(c.updatedAt)},
        {QStringLiteral("model_name"), c.modelName},
        {QStringLiteral("system_prompt"), c.systemPrompt},
        {QStringLiteral("mode"), c.mode},
        {QStringLiteral("template_name"), c.templateName},
        {QStringLiteral("message_count"), qint64(messages.size())},
    };
    QJsonArray list;
    for (qsizetype i = 0; i < messages.size(); ++i) {
        const StoredMessage& m = messages[i];
        QJsonArray tokens;
        for (qint32 t : m.tokens) tokens.append(t);
        QJsonObject message{
            {QStringLiteral("id"), m.id},
            {QStringLiteral("position"), m.position},
            {QStringLiteral("role"), m.role},
            {QStringLiteral("content"), m.content},
            {QStringLiteral("created_at"), toStoredTime(m.createdAt)},
            {QStringLiteral("finish_reason"), m.finishReason},
            {QStringLiteral("stats"), m.stats},
            {QStringLiteral("tokens"), tokens},
        };
        if (!m.tokenRecords.isEmpty()) {
            if (decoded[i]) {
                QJsonArray steps;
                for (const StepRecord& step : *decoded[i]) steps.append(stepJson(step, pieces));
                message[QStringLiteral("token_records")] = steps;
            } else {
                message[QStringLiteral("token_records_error")] = QString::fromStdString(decoded[i].error().message);
            }
        }
        list.append(message);
    }
    QJsonObject root{
        {QStringLiteral("format"), QStringLiteral("inferscope.conversation")},
        {QStringLiteral("format_version"), 1},
        {QStringLiteral("conversation"), conversation},
        {QStringLiteral("messages"), list},
    };
    return QJsonDocument(root).toJson(QJsonDocument::Indented);
}

bool ChatStore::exportConversation(qint64 id, const QString& filePath, const QString& format) {
    const QString kind = format.toLower();
    if (kind != QLatin1String("markdown") && kind != QLatin1String("md") && kind != QLatin1String("json"))
        return d->fail(tr("Unknown export format \"%1\" (markdown or json).").arg(format));
    const std::optional<StoredConversation> c = conversation(id);
    if (!c) return false;  // lastError says why
    const QList<StoredMessage> list = messages(id);
    const QByteArray bytes = kind == QLatin1String("json") ? toJson(*c, list) : toMarkdown(*c, list).toUtf8();
    QSaveFile file(filePath);
    if (!file.open(QIODevice::WriteOnly) || file.write(bytes) != bytes.size() || !file.commit())
        return d->fail(tr("Could not write %1: %2").arg(filePath, file.errorString()));
    return true;
}

}  // namespace inferscope
