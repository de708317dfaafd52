// Exports of one conversation, written atomically (QSaveFile).
//
// Markdown:
//   # <title>
//
//   Model: <model> · Mode: <mode> (template <name>) · Created: yyyy-MM-dd HH:mm UTC
//
//   > **System prompt:** <text, each line quoted>
//
//   ## User | ## Assistant | ## System       one per message, its text verbatim; an answer with
//                                            several versions: "## Assistant (version 2 of 3)"
//                                            (the version shown)
//
//   `finish: eos · decode_tps: 41.2 · …`     assistant: finish reason and stats (nested keys dotted,
//                                            whole numbers whole)
//   ### Version 1 of 3                       then each other version of that answer, by index,
//                                            its text and stats line
//
// JSON ("format": "inferscope.conversation", "format_version": 1): the conversation's fields and
// every message's (snake_case keys, times UTC ISO-8601 with milliseconds), plus for a message
// with token records "token_records": one object per generated token (core/record/step_record_json.h,
// the schema of the CLI's --json token events too)
//   {step, position, id, piece, p (raw softmax), p_final (as drawn), logit, rank, entropy_bits,
//    log_sum_exp, survivors: {stage: n}, forward_us, sample_us, end_of_generation,
//    top: [{id, piece?, logit, p (raw), stages: {raw, penalty, grammar, top-k, top-p, min-p, temperature}}]}
// A piece that is not whole UTF-8 (part of a character) also has "piece_bytes" in hex. A top
// candidate's "piece" comes from the answer's origin (schema 3: every candidate's text is kept);
// for an answer stored before, where the conversation itself produced that id.
// An answer with a known origin has "origin" (gui/store/answer_origin_json.h: model file, name and
// vocabulary hash, backend, KV cache, "timed_by", token texts).
// Records that do not decode give "token_records_error" with the decoder's message instead.
// An answer with several versions also has "version_index" (0-based, the one shown, whose
// fields the message has) and "version_count", and, when its other versions were given,
// "versions": [{index, content, finish_reason, stats, tokens, origin?, token_records | token_records_error}]
// by index. Single-version messages have none of these keys.
#include <QJsonArray>
#include <QJsonDocument>
#include <QSaveFile>
#include <cmath>
#include <string>
#include <unordered_map>

#include "store/answer_origin_json.h"
#include "store/chat_store_sql.h"
#include "record/step_record_codec.h"
#include "record/step_record_json.h"

namespace inferscope {

using namespace store;

namespace {

QString statValue(const QJsonValue& value) {
    if (value.isDouble()) {
        // Whole numbers whole (byte and token counts), large ones without an exponent.
        const double v = value.toDouble();
        if (std::isfinite(v) && v == std::floor(v) && std::abs(v) < 1e15) return QString::number(qint64(v));
        if (std::abs(v) >= 1e5) return QString::number(v, 'f', 1);
        return QString::number(v, 'g', 6);
    }
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

// The step record in the schema the CLI's --json shares (core/record/step_record_json.h); a top
// candidate's piece where this conversation produced its id.
QJsonObject stepJson(const StepRecord& step, const PieceMap& pieces) {
    const auto json = stepRecordJson(step, [&pieces](int32_t id) -> std::optional<std::string> {
        const auto it = pieces.find(id);
        return it == pieces.end() ? std::nullopt : std::optional(it->second);
    });
    const std::string text = json.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
    return QJsonDocument::fromJson(QByteArray::fromStdString(text)).object();
}

// The pieces an answer's candidates are named with: its origin's token texts when it kept them,
// else what the conversation produced.
PieceMap answerPieces(const QJsonObject& originJson, const PieceMap& conversationWide) {
    const AnswerOrigin origin = originFromJson(originJson);
    if (!origin.known()) return conversationWide;
    PieceMap pieces;
    for (const auto& [id, text] : origin.tokens) pieces.emplace(id, text.bytes);
    return pieces;
}

using Decoded = Result<std::vector<StepRecord>>;

Decoded decode(const QByteArray& records) {
    return decodeStepRecords({reinterpret_cast<const uint8_t*>(records.constData()), size_t(records.size())});
}

// "token_records" (decoded) or "token_records_error", when there are records.
void putRecords(QJsonObject& object, const QByteArray& records, const Decoded& decoded, const PieceMap& pieces) {
    if (records.isEmpty()) return;
    if (!decoded) {
        object[QStringLiteral("token_records_error")] = QString::fromStdString(decoded.error().message);
        return;
    }
    QJsonArray steps;
    for (const StepRecord& step : *decoded) steps.append(stepJson(step, pieces));
    object[QStringLiteral("token_records")] = steps;
}

QJsonArray tokensJson(const QVector<qint32>& tokens) {
    QJsonArray array;
    for (qint32 t : tokens) array.append(t);
    return array;
}

}  // namespace

QString ChatStore::toMarkdown(const StoredConversation& c, const QList<StoredMessage>& messages,
                              const QHash<qint64, QList<StoredVersion>>& versions) {
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
    const auto textAndStats = [&md](QString content, const QString& finishReason, const QJsonObject& statsObject) {
        while (content.endsWith(QLatin1Char('\n'))) content.chop(1);
        md += content + QStringLiteral("\n\n");
        QStringList stats;
        if (!finishReason.isEmpty()) stats << QStringLiteral("finish: ") + finishReason;
        flattenStats(statsObject, {}, stats);
        if (!stats.isEmpty()) md += QLatin1Char('`') + stats.join(QStringLiteral(" · ")) + QStringLiteral("`\n\n");
    };
    for (const StoredMessage& m : messages) {
        md += QStringLiteral("## ") + roleHeading(m.role);
        if (m.versionCount > 1) md += QStringLiteral(" (version %1 of %2)").arg(m.versionIndex + 1).arg(m.versionCount);
        md += QStringLiteral("\n\n");
        textAndStats(m.content, m.finishReason, m.stats);
        for (const StoredVersion& v : versions.value(m.id)) {
            md += QStringLiteral("### Version %1 of %2\n\n").arg(v.index + 1).arg(m.versionCount);
            textAndStats(v.content, v.finishReason, v.stats);
        }
    }
    md.chop(1);  // one newline at the end
    return md;
}

QByteArray ChatStore::toJson(const StoredConversation& c, const QList<StoredMessage>& messages,
                             const QHash<qint64, QList<StoredVersion>>& versions) {
    PieceMap pieces;  // every id this conversation produced (in any version), for naming top candidates
    const auto decodeAll = [&](const QByteArray& records) {
        Decoded result = records.isEmpty() ? Decoded{} : decode(records);
        if (result)
            for (const StepRecord& step : *result) pieces.emplace(step.sample.id, step.piece);
        return result;
    };
    QList<Decoded> decoded;
    QHash<qint64, QList<Decoded>> decodedVersions;  // by message id, as versions
    for (const StoredMessage& m : messages) {
        decoded.append(decodeAll(m.tokenRecords));
        for (const StoredVersion& v : versions.value(m.id)) decodedVersions[m.id].append(decodeAll(v.tokenRecords));
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
        QJsonObject message{
            {QStringLiteral("id"), m.id},
            {QStringLiteral("position"), m.position},
            {QStringLiteral("role"), m.role},
            {QStringLiteral("content"), m.content},
            {QStringLiteral("created_at"), toStoredTime(m.createdAt)},
            {QStringLiteral("finish_reason"), m.finishReason},
            {QStringLiteral("stats"), m.stats},
            {QStringLiteral("tokens"), tokensJson(m.tokens)},
        };
        if (!m.origin.isEmpty()) message[QStringLiteral("origin")] = m.origin;
        putRecords(message, m.tokenRecords, decoded[i], answerPieces(m.origin, pieces));
        if (m.versionCount > 1) {
            message[QStringLiteral("version_index")] = m.versionIndex;
            message[QStringLiteral("version_count")] = m.versionCount;
        }
        if (const QList<StoredVersion> others = versions.value(m.id); !others.isEmpty()) {
            QJsonArray array;
            for (qsizetype k = 0; k < others.size(); ++k) {
                const StoredVersion& v = others[k];
                QJsonObject version{
                    {QStringLiteral("index"), v.index},
                    {QStringLiteral("content"), v.content},
                    {QStringLiteral("finish_reason"), v.finishReason},
                    {QStringLiteral("stats"), v.stats},
                    {QStringLiteral("tokens"), tokensJson(v.tokens)},
                };
                if (!v.origin.isEmpty()) version[QStringLiteral("origin")] = v.origin;
                putRecords(version, v.tokenRecords, decodedVersions[m.id][k], answerPieces(v.origin, pieces));
                array.append(version);
            }
            message[QStringLiteral("versions")] = array;
        }
        list.append(message);
    }
    QJsonObject root{
        {QStringLiteral("format"), QStringLiteral("inferscope.conversation")},
        {QStringLiteral("format_version"), 1},
        {QStringLiteral("conversation"), conversation},
        {QStringLiteral("messages"), list},
    };
    return QJsonDocument(root).toJson(QJsonDocument::Compact);  // token records are most of it: no indentation
}

bool ChatStore::exportConversation(qint64 id, const QString& filePath, const QString& format) {
    const QString kind = format.toLower();
    if (kind != QLatin1String("markdown") && kind != QLatin1String("md") && kind != QLatin1String("json"))
        return d->fail(tr("Unknown export format \"%1\" (markdown or json).").arg(format));
    const std::optional<StoredConversation> c = conversation(id);
    if (!c) return false;  // lastError says why
    const QList<StoredMessage> list = messages(id);
    QHash<qint64, QList<StoredVersion>> others;
    for (const StoredMessage& m : list)
        if (m.versionCount > 1) others.insert(m.id, versions(m.id));
    const QByteArray bytes = kind == QLatin1String("json") ? toJson(*c, list, others) : toMarkdown(*c, list, others).toUtf8();
    // Unbuffered, every write checked: through its buffer, Qt 6.4's QSaveFile::commit() reports
    // success for a file cut short by a full disk (the flush's short write goes unnoticed) and
    // replaces the earlier file with the truncated one. Writing the rest after a short write
    // makes the system say why ("No space left on device") instead of "Unknown error". On
    // failure QSaveFile's destructor removes the temporary file: the target is never touched.
    QSaveFile file(filePath);
    if (!file.open(QIODevice::WriteOnly | QIODevice::Unbuffered))
        return d->fail(tr("Could not write %1: %2").arg(filePath, file.errorString()));
    for (qint64 done = 0; done < bytes.size();) {
        const qint64 n = file.write(bytes.constData() + done, bytes.size() - done);
        if (n <= 0) return d->fail(tr("Could not write %1: %2").arg(filePath, file.errorString()));
        done += n;
    }
    if (!file.commit()) return d->fail(tr("Could not write %1: %2").arg(filePath, file.errorString()));
    return true;
}

}  // namespace inferscope
