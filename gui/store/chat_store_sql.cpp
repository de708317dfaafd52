// ChatStore internals: result codes, statements, transactions, and the row <-> struct mapping.
#include "store/chat_store_sql.h"

#include <QJsonDocument>
#include <QSqlDriver>
#include <QtEndian>

namespace inferscope::store {

int sqliteCode(const QSqlError& error) {
    bool ok = false;
    const int code = error.nativeErrorCode().toInt(&ok);
    return ok ? (code & 0xff) : 0;  // extended codes carry the primary one in the low byte
}

bool isLockError(const QSqlError& error) {
    const int code = sqliteCode(error);
    return code == kSqliteBusy || code == kSqliteLocked;
}

bool isDamageError(const QSqlError& error) {
    const int code = sqliteCode(error);
    return code == kSqliteCorrupt || code == kSqliteNotADb;
}

QString errorText(const QSqlError& error) {
    const QString text = error.databaseText().isEmpty() ? error.text() : error.databaseText();
    return text.isEmpty() ? QStringLiteral("unknown error") : text;
}

bool run(QSqlQuery& query, const QString& sql, const QVariantList& values) {
    if (!query.prepare(sql)) return false;
    for (const QVariant& value : values) query.addBindValue(value);
    return query.exec();
}

QVariant scalar(const QSqlDatabase& db, const QString& sql, QSqlError* error) {
    QSqlQuery query(db);
    query.setForwardOnly(true);
    if (!run(query, sql) || !query.next()) {
        if (error) *error = query.lastError();
        return {};
    }
    return query.value(0);
}

WriteTransaction::WriteTransaction(const QSqlDatabase& db) : db_(db) {
    QSqlQuery query(db_);
    began_ = query.exec(QStringLiteral("BEGIN IMMEDIATE"));
    if (!began_) error_ = query.lastError();
}

WriteTransaction::~WriteTransaction() {
    if (began_ && !done_) {
        QSqlQuery query(db_);
        query.exec(QStringLiteral("ROLLBACK"));
    }
}

bool WriteTransaction::commit() {
    if (!began_ || done_) return false;
    QSqlQuery query(db_);
    if (!query.exec(QStringLiteral("COMMIT"))) {
        error_ = query.lastError();
        return false;  // the destructor rolls back
    }
    done_ = true;
    return true;
}

QString toStoredTime(const QDateTime& time) {
    return time.toUTC().toString(Qt::ISODateWithMs);
}

QDateTime fromStoredTime(const QString& text) {
    QDateTime time = QDateTime::fromString(text, Qt::ISODateWithMs);
    return time.isValid() ? time.toUTC() : time;
}

QByteArray packTokens(const QVector<qint32>& tokens) {
    QByteArray bytes(tokens.size() * qsizetype(sizeof(qint32)), Qt::Uninitialized);
    qToLittleEndian<qint32>(tokens.constData(), tokens.size(), bytes.data());
    return bytes;
}

std::optional<QVector<qint32>> unpackTokens(const QByteArray& bytes) {
    if (bytes.size() % qsizetype(sizeof(qint32)) != 0) return std::nullopt;
    QVector<qint32> tokens(bytes.size() / qsizetype(sizeof(qint32)));
    qFromLittleEndian<qint32>(bytes.constData(), tokens.size(), tokens.data());
    return tokens;
}

QString statsToText(const QJsonObject& stats) {
    return QString::fromUtf8(QJsonDocument(stats).toJson(QJsonDocument::Compact));
}

QJsonObject statsFromText(const QString& text) {
    return QJsonDocument::fromJson(text.toUtf8()).object();  // not an object: {}
}

const QString kConversationColumns = QStringLiteral(
    "c.id, c.title, c.created_at, c.updated_at, c.model_name, c.system_prompt, c.mode, c.template_name");
const QString kMessageTextColumns = QStringLiteral(
    "m.id, m.conversation_id, m.position, m.role, m.content, m.created_at, m.finish_reason, m.stats");
const QString kMessageColumns = kMessageTextColumns + QStringLiteral(", m.tokens, m.token_records");
const QString kMessageColumnsWithOrigin = kMessageColumns + QStringLiteral(", m.origin");

StoredConversation readConversation(const QSqlQuery& query) {
    StoredConversation c;
    c.id = query.value(0).toLongLong();
    c.title = query.value(1).toString();
    c.createdAt = fromStoredTime(query.value(2).toString());
    c.updatedAt = fromStoredTime(query.value(3).toString());
    c.modelName = query.value(4).toString();
    c.systemPrompt = query.value(5).toString();
    c.mode = query.value(6).toString();
    c.templateName = query.value(7).toString();
    return c;
}

StoredMessage readMessage(const QSqlQuery& query, bool withBlobs) {
    StoredMessage m;
    m.id = query.value(0).toLongLong();
    m.conversationId = query.value(1).toLongLong();
    m.position = query.value(2).toInt();
    m.role = query.value(3).toString();
    m.content = query.value(4).toString();
    m.createdAt = fromStoredTime(query.value(5).toString());
    m.finishReason = query.value(6).toString();
    m.stats = statsFromText(query.value(7).toString());
    if (withBlobs) {
        m.tokens = unpackTokens(query.value(8).toByteArray()).value_or(QVector<qint32>{});
        m.tokenRecords = query.value(9).toByteArray();
        if (query.record().count() > 10) m.origin = statsFromText(query.value(10).toString());
    }
    return m;
}

bool insertConversation(const QSqlDatabase& db, const StoredConversation& c, QSqlError* error) {
    QSqlQuery query(db);
    const bool ok = run(query,
        QStringLiteral("INSERT INTO conversations (id, title, created_at, updated_at, model_name, "
                       "system_prompt, mode, template_name) VALUES (?, ?, ?, ?, ?, ?, ?, ?)"),
        {c.id > 0 ? QVariant(c.id) : QVariant(), text(c.title), toStoredTime(c.createdAt),
         toStoredTime(c.updatedAt), text(c.modelName), text(c.systemPrompt),
         c.mode.isEmpty() ? QStringLiteral("chat") : c.mode, text(c.templateName)});
    if (!ok && error) *error = query.lastError();
    return ok;
}

bool insertMessage(const QSqlDatabase& db, const StoredMessage& m, QSqlError* error) {
    QSqlQuery query(db);
    const bool ok = run(query,
        QStringLiteral("INSERT INTO messages (id, conversation_id, position, role, content, created_at, "
                       "finish_reason, stats, tokens, token_records, origin) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"),
        {m.id > 0 ? QVariant(m.id) : QVariant(), m.conversationId, m.position, text(m.role),
         text(m.content), toStoredTime(m.createdAt), text(m.finishReason), statsToText(m.stats),
         packTokens(m.tokens), m.tokenRecords, statsToText(m.origin)});
    if (!ok && error) *error = query.lastError();
    return ok;
}

}  // namespace inferscope::store
