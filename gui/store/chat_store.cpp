// ChatStore: conversations and messages, read and written (every write in one transaction), and
// full-text search. Opening, schema, recovery and exports are in the chat_store_*.cpp beside it.
#include "store/chat_store.h"

#include <QAtomicInteger>
#include <QCoreApplication>
#include <QRegularExpression>

#include "store/chat_store_sql.h"

namespace inferscope {

using namespace store;

namespace {
QAtomicInteger<quint64> connectionCounter;

QString tr(const char* text) {
    return QCoreApplication::translate("ChatStore", text);
}

QString notOpen() {
    return store::notOpenMessage();
}
}  // namespace

QString store::notOpenMessage() {
    return tr("The conversation database is not open.");
}

ChatStore::ChatStore(QObject* parent) : QObject(parent), d(std::make_unique<Impl>()) {
    d->connectionName = QStringLiteral("inferscope-chat-store-%1").arg(connectionCounter.fetchAndAddRelaxed(1));
}

ChatStore::~ChatStore() {
    if (d->connected) closeConnection(d->connectionName);
}

ChatStore::OpenReport ChatStore::open(const QString& path) {
    if (d->connected) closeConnection(d->connectionName);
    d->connected = false;
    d->report = openStore(*d, path);
    d->lastError = d->report.ok ? QString() : d->report.message;
    emit opened();
    emit conversationsChanged();
    return d->report;
}

void ChatStore::close() {
    if (!d->connected) return;
    closeConnection(d->connectionName);
    d->connected = false;
    d->persistent = false;
    d->report = {};
    emit opened();
    emit conversationsChanged();
}

bool ChatStore::isOpen() const { return d->connected && d->db().isOpen(); }
QString ChatStore::path() const { return d->path; }
bool ChatStore::isPersistent() const { return isOpen() && d->persistent; }
QString ChatStore::openMessage() const { return d->report.message; }
QString ChatStore::lastError() const { return d->lastError; }
void ChatStore::setBusyTimeout(int milliseconds) { d->busyTimeoutMs = std::max(0, milliseconds); }
int ChatStore::schemaVersion() { return knownSchemaVersion(); }

std::optional<qint64> ChatStore::createConversation(const StoredConversation& conversation) {
    if (!isOpen()) return d->failNone(notOpen());
    StoredConversation c = conversation;
    c.id = 0;
    if (!c.createdAt.isValid()) c.createdAt = QDateTime::currentDateTimeUtc();
    if (!c.updatedAt.isValid()) c.updatedAt = c.createdAt;
    const QString what = tr("Could not create the conversation: ");
    WriteTransaction transaction(d->db());
    if (!transaction.began()) return d->failNone(what + errorText(transaction.error()));
    QSqlError error;
    if (!insertConversation(d->db(), c, &error)) return d->failNone(what + errorText(error));
    const qint64 id = scalar(d->db(), QStringLiteral("SELECT last_insert_rowid()")).toLongLong();
    if (!transaction.commit()) return d->failNone(what + errorText(transaction.error()));
    emit conversationsChanged();
    return id;
}

// Runs one write statement in its own transaction; false (with lastError) if it fails or, when
// mustChange, changes no row (no such conversation).
static bool writeOne(const State& s, const QString& what, const QString& sql, const QVariantList& values,
                     bool mustChange = true) {
    if (!s.connected) return s.fail(notOpen());
    WriteTransaction transaction(s.db());
    if (!transaction.began()) return s.fail(what + QStringLiteral(": ") + errorText(transaction.error()));
    QSqlQuery query(s.db());
    if (!run(query, sql, values)) return s.fail(what + QStringLiteral(": ") + errorText(query.lastError()));
    if (mustChange && query.numRowsAffected() < 1) return s.fail(what + QStringLiteral(": ") + tr("no such conversation"));
    query.finish();
    if (!transaction.commit()) return s.fail(what + QStringLiteral(": ") + errorText(transaction.error()));
    return true;
}

bool ChatStore::updateConversation(const StoredConversation& c) {
    const bool ok = writeOne(*d, tr("Could not update the conversation"),
        QStringLiteral("UPDATE conversations SET title = ?, model_name = ?, system_prompt = ?, mode = ?, "
                       "template_name = ?, updated_at = ? WHERE id = ?"),
        {text(c.title), text(c.modelName), text(c.systemPrompt),
         c.mode.isEmpty() ? QStringLiteral("chat") : c.mode, text(c.templateName),
         toStoredTime(QDateTime::currentDateTimeUtc()), c.id});
    if (ok) emit conversationsChanged();
    return ok;
}

bool ChatStore::renameConversation(qint64 id, const QString& title) {
    const bool ok = writeOne(*d, tr("Could not rename the conversation"),
                             QStringLiteral("UPDATE conversations SET title = ? WHERE id = ?"), {text(title), id});
    if (ok) emit conversationsChanged();
    return ok;
}

bool ChatStore::deleteConversation(qint64 id) {
    // Its messages and their versions go by ON DELETE CASCADE, search entries by the FTS delete trigger.
    const bool ok = writeOne(*d, tr("Could not delete the conversation"),
                             QStringLiteral("DELETE FROM conversations WHERE id = ?"), {id});
    if (ok) emit conversationsChanged();
    return ok;
}

QList<StoredConversation> ChatStore::conversations() const {
    if (!isOpen()) {
        d->fail(notOpen());
        return {};
    }
    QSqlError error;
    auto result = selectRows(d->db(),
                             QStringLiteral("SELECT %1, (SELECT count(*) FROM messages m WHERE m.conversation_id = c.id) "
                                            "FROM conversations c ORDER BY c.updated_at DESC, c.id DESC").arg(kConversationColumns),
                             {}, [](const QSqlQuery& query) {
                                 StoredConversation c = readConversation(query);
                                 c.messageCount = query.value(8).toInt();
                                 return c;
                             }, &error);
    if (error.isValid()) d->fail(tr("Could not list the conversations: %1").arg(errorText(error)));
    return result;
}

std::optional<StoredConversation> ChatStore::conversation(qint64 id) const {
    if (!isOpen()) return d->failNone(notOpen());
    QSqlQuery query(d->db());
    query.setForwardOnly(true);
    if (!run(query, QStringLiteral("SELECT %1, (SELECT count(*) FROM messages m WHERE m.conversation_id = c.id) "
                                   "FROM conversations c WHERE c.id = ?").arg(kConversationColumns), {id}) ||
        !query.next()) {
        d->fail(query.lastError().isValid() ? errorText(query.lastError()) : tr("No conversation %1.").arg(id));
        return std::nullopt;
    }
    StoredConversation c = readConversation(query);
    c.messageCount = query.value(8).toInt();
    return c;
}

std::optional<qint64> ChatStore::appendMessage(const StoredMessage& message, const QList<StoredVersion>& otherVersions) {
    return writeMessage(message, otherVersions, false);
}

std::optional<qint64> ChatStore::replaceMessagesFrom(const StoredMessage& message, const QList<StoredVersion>& otherVersions) {
    return writeMessage(message, otherVersions, true);
}

std::optional<qint64> ChatStore::writeMessage(const StoredMessage& message, const QList<StoredVersion>& otherVersions,
                                              bool replaceFromPosition) {
    if (!isOpen()) return d->failNone(notOpen());
    const QString what = tr("Could not save the message: ");
    if (!otherVersions.isEmpty() && !versionIndexesValid(message.versionIndex, otherVersions))
        return d->failNone(what + tr("its version %1 and the %2 others must be numbered 0 to %2 once each")
                                      .arg(message.versionIndex).arg(otherVersions.size()));
    const QSqlDatabase db = d->db();
    WriteTransaction transaction(db);
    if (!transaction.began()) return d->failNone(what + errorText(transaction.error()));

    StoredMessage m = message;
    m.id = 0;
    if (!m.createdAt.isValid()) m.createdAt = QDateTime::currentDateTimeUtc();
    QSqlQuery touch(db);
    if (!run(touch, QStringLiteral("UPDATE conversations SET updated_at = ? WHERE id = ?"),
             {toStoredTime(QDateTime::currentDateTimeUtc()), m.conversationId}))
        return d->failNone(what + errorText(touch.lastError()));
    if (touch.numRowsAffected() < 1)
        return d->failNone(what + tr("no conversation %1").arg(m.conversationId));
    if (replaceFromPosition) {  // versions of the removed messages go by ON DELETE CASCADE
        QSqlQuery remove(db);
        if (!run(remove, QStringLiteral("DELETE FROM messages WHERE conversation_id = ? AND position >= ?"),
                 {m.conversationId, message.position}))
            return d->failNone(what + errorText(remove.lastError()));
    }
    QSqlError error;
    const QVariant next = scalar(db, QStringLiteral("SELECT coalesce(max(position) + 1, 0) FROM messages "
                                                    "WHERE conversation_id = %1").arg(m.conversationId), &error);
    if (!next.isValid()) return d->failNone(what + errorText(error));
    m.position = next.toInt();
    if (!insertMessage(db, m, &error)) return d->failNone(what + errorText(error));
    const qint64 id = scalar(db, QStringLiteral("SELECT last_insert_rowid()")).toLongLong();
    if (!otherVersions.isEmpty() && !writeVersions(db, id, otherVersions, &error))
        return d->failNone(what + errorText(error));
    if (!transaction.commit())
        return d->failNone(what + errorText(transaction.error()));
    emit conversationsChanged();
    return id;
}

bool ChatStore::truncateConversation(qint64 conversationId, int position) {
    if (!isOpen()) return d->fail(notOpen());
    const QString what = tr("Could not remove the messages: ");
    WriteTransaction transaction(d->db());
    if (!transaction.began()) return d->fail(what + errorText(transaction.error()));
    QSqlQuery query(d->db());
    if (!run(query, QStringLiteral("UPDATE conversations SET updated_at = ? WHERE id = ?"),
             {toStoredTime(QDateTime::currentDateTimeUtc()), conversationId}))
        return d->fail(what + errorText(query.lastError()));
    if (query.numRowsAffected() < 1) return d->fail(what + tr("no conversation %1").arg(conversationId));
    // Their versions go by ON DELETE CASCADE.
    if (!run(query, QStringLiteral("DELETE FROM messages WHERE conversation_id = ? AND position >= ?"),
             {conversationId, position}))
        return d->fail(what + errorText(query.lastError()));
    query.finish();
    if (!transaction.commit()) return d->fail(what + errorText(transaction.error()));
    emit conversationsChanged();
    return true;
}

QList<StoredMessage> ChatStore::messages(qint64 conversationId) const {
    if (!isOpen()) {
        d->fail(notOpen());
        return {};
    }
    QSqlError error;
    auto result = selectRows(d->db(),
                             QStringLiteral("SELECT %1 FROM messages m WHERE m.conversation_id = ? ORDER BY m.position").arg(kMessageColumnsWithOrigin),
                             {conversationId}, [](const QSqlQuery& query) { return readMessage(query); }, &error);
    if (error.isValid()) d->fail(tr("Could not read the messages: %1").arg(errorText(error)));
    QSqlError versionsError;
    if (!result.isEmpty() && !fillVersionNumbers(d->db(), conversationId, result, &versionsError))
        d->fail(tr("Could not read the versions of the answers: %1").arg(errorText(versionsError)));
    return result;
}

QString ChatStore::toFtsQuery(const QString& userText) {
    QStringList terms;
    // Control characters (NUL included) separate words too: FTS5 would read a NUL as the end.
    static const QRegularExpression separators(QStringLiteral("[\\s\\p{Cc}]+"));
    for (const QString& word : userText.split(separators, Qt::SkipEmptyParts)) {
        // The unicode61 tokenizer would find no token in a word without letters or digits, and an
        // empty phrase ("") is a syntax error.
        if (std::none_of(word.begin(), word.end(), [](QChar c) { return c.isLetterOrNumber(); })) continue;
        QString quoted = word;
        quoted.replace(QLatin1Char('"'), QStringLiteral("\"\""));  // inside a string "" is a quote
        terms << QLatin1Char('"') + quoted + QStringLiteral("\"*");
    }
    return terms.join(QLatin1Char(' '));
}

QList<SearchHit> ChatStore::search(const QString& text, int limit) const {
    if (!isOpen()) {
        d->fail(notOpen());
        return {};
    }
    const QString match = toFtsQuery(text);
    if (match.isEmpty() || limit <= 0) return {};
    QSqlError error;
    // The versions shown and the others, best first together (bm25: lower is better).
    auto hits = selectRows(d->db(),
                           QStringLiteral("SELECT conversation_id, message_id, title, snip, version FROM ("
                                          " SELECT m.conversation_id, m.id AS message_id, c.title, snippet(messages_fts, 0, '[', ']', '…', 12) AS snip,"
                                          "  -1 AS version, bm25(messages_fts) AS rank"
                                          " FROM messages_fts JOIN messages m ON m.id = messages_fts.rowid"
                                          " JOIN conversations c ON c.id = m.conversation_id WHERE messages_fts MATCH ?"
                                          " UNION ALL"
                                          " SELECT m.conversation_id, m.id, c.title, snippet(message_versions_fts, 0, '[', ']', '…', 12),"
                                          "  v.idx, bm25(message_versions_fts)"
                                          " FROM message_versions_fts JOIN message_versions v ON v.id = message_versions_fts.rowid"
                                          " JOIN messages m ON m.id = v.message_id JOIN conversations c ON c.id = m.conversation_id"
                                          " WHERE message_versions_fts MATCH ?)"
                                          " ORDER BY rank, message_id, version LIMIT ?"),
                           {match, match, limit}, [](const QSqlQuery& query) {
                               return SearchHit{query.value(0).toLongLong(), query.value(1).toLongLong(), query.value(2).toString(),
                                                query.value(3).toString(), query.value(4).toInt()};
                           }, &error);
    if (error.isValid()) d->fail(tr("Search failed: %1").arg(errorText(error)));
    return hits;
}

}  // namespace inferscope
