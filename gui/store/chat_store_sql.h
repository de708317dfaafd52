#pragma once
// ChatStore internals shared by its source files (not part of the public interface): the
// private state, SQLite result codes, a write transaction, and the row <-> struct mapping.

#include <QHash>
#include <QSqlDatabase>
#include <QSqlError>
#include <QSqlQuery>
#include <QSqlRecord>
#include <QVariantList>
#include <type_traits>
#include <utility>

#include "store/chat_store.h"

namespace inferscope::store {

// SQLite primary result codes we react to. Qt's QSQLITE driver puts the code of the failing
// sqlite3 call into QSqlError::nativeErrorCode().
enum SqliteCode : int {
    kSqliteBusy = 5,       // another connection holds a conflicting lock (after busy_timeout)
    kSqliteLocked = 6,
    kSqliteReadOnly = 8,
    kSqliteIoErr = 10,
    kSqliteCorrupt = 11,
    kSqliteCantOpen = 14,
    kSqliteNotADb = 26,
};
int sqliteCode(const QSqlError& error);  // 0 when there is none
bool isLockError(const QSqlError& error);
bool isDamageError(const QSqlError& error);
QString errorText(const QSqlError& error);  // SQLite's own words, e.g. "database is locked"

// Prepares and runs one statement (QSQLITE runs only the first statement of a string) with
// positional bindings. On failure the error is in query.lastError().
bool run(QSqlQuery& query, const QString& sql, const QVariantList& values = {});
// The first column of the first row, or an invalid QVariant (error in *error if given).
QVariant scalar(const QSqlDatabase& db, const QString& sql, QSqlError* error = nullptr);
// Every row a SELECT gives, each made by read(query). On an error *error says why, and the rows
// read before it are returned.
template <typename Read>
auto selectRows(const QSqlDatabase& db, const QString& sql, const QVariantList& values, Read read, QSqlError* error) {
    QList<std::decay_t<std::invoke_result_t<Read&, const QSqlQuery&>>> rows;
    QSqlQuery query(db);
    query.setForwardOnly(true);
    if (!run(query, sql, values)) {
        *error = query.lastError();
        return rows;
    }
    while (query.next()) rows.append(read(std::as_const(query)));
    if (query.lastError().isValid()) *error = query.lastError();
    return rows;
}
// "The conversation database is not open."
QString notOpenMessage();

// BEGIN IMMEDIATE (takes the write lock up front, so a busy database fails here and not halfway
// through); rolls back on destruction unless committed.
class WriteTransaction {
public:
    explicit WriteTransaction(const QSqlDatabase& db);
    ~WriteTransaction();
    WriteTransaction(const WriteTransaction&) = delete;
    WriteTransaction& operator=(const WriteTransaction&) = delete;
    bool began() const { return began_; }
    QSqlError error() const { return error_; }
    bool commit();

private:
    QSqlDatabase db_;
    bool began_ = false;
    bool done_ = false;
    QSqlError error_;
};

// Qt binds a null QString as SQL NULL; the text columns are NOT NULL with '' for nothing.
inline QString text(const QString& s) { return s.isNull() ? QStringLiteral("") : s; }

// UTC ISO-8601 with milliseconds ("2026-11-05T12:34:56.789Z"): sorts as text.
QString toStoredTime(const QDateTime& time);
QDateTime fromStoredTime(const QString& text);
QByteArray packTokens(const QVector<qint32>& tokens);  // little-endian int32s
std::optional<QVector<qint32>> unpackTokens(const QByteArray& bytes);  // nullopt: length not a multiple of 4
QString statsToText(const QJsonObject& stats);
QJsonObject statsFromText(const QString& text);

// Column lists matching readConversation()/readMessage() (select them in this order).
extern const QString kConversationColumns;
extern const QString kMessageColumns;         // all columns of schema 1 and 2
extern const QString kMessageColumnsWithOrigin;  // and schema 3's origin (readMessage reads it when selected)
extern const QString kMessageTextColumns;     // without tokens and token_records (read apart in recovery)
StoredConversation readConversation(const QSqlQuery& query);
StoredMessage readMessage(const QSqlQuery& query, bool withBlobs = true);

// Inserts with explicit ids (recovery copies keep them); messages keep their position.
bool insertConversation(const QSqlDatabase& db, const StoredConversation& c, QSqlError* error);
bool insertMessage(const QSqlDatabase& db, const StoredMessage& m, QSqlError* error);

// Answer versions (chat_store_versions.cpp). The row in messages is the version shown; the
// others are rows of message_versions, and the shown one's index is the one they leave out.
extern const QString kVersionColumns;  // v.id, v.message_id, then readVersion()'s columns
extern const QString kVersionColumnsWithOrigin;  // and schema 3's origin
StoredVersion readVersion(const QSqlQuery& query, bool withBlobs = true);  // from kVersionColumns
bool insertVersion(const QSqlDatabase& db, qint64 id, qint64 messageId, const StoredVersion& v, QSqlError* error);  // id 0: a new one
// True when the indexes of others and shownIndex are exactly 0 .. others.size().
bool versionIndexesValid(int shownIndex, const QList<StoredVersion>& others);
// The smallest index >= 0 that otherIndexes leave out: the shown version's.
int shownIndexAmong(QList<int> otherIndexes);
// Replaces messageId's other versions (inside the caller's transaction; indexes already checked).
bool writeVersions(const QSqlDatabase& db, qint64 messageId, const QList<StoredVersion>& others, QSqlError* error);
// Fills versionIndex and versionCount of messages (all of one conversation).
bool fillVersionNumbers(const QSqlDatabase& db, qint64 conversationId, QList<StoredMessage>& messages, QSqlError* error);

// Schema (chat_store_schema.cpp).
int knownSchemaVersion();
// Applies migrations fromVersion+1 .. knownSchemaVersion(), each in one transaction that also
// sets PRAGMA user_version. On failure the database stays at the last complete version.
bool migrate(const QSqlDatabase& db, int fromVersion, QSqlError* error, QString* failedStep);

// Adds and opens a QSQLITE connection named name on file (or ":memory:"), with busy timeout
// and foreign keys on. On failure the connection is removed again and *error says why. A
// recovery source is opened without the store's pragmas (one of them reads the schema, which
// may be what is damaged).
enum class ConnectionUse { Store, RecoverySource };
bool openConnection(const QString& name, const QString& file, int busyTimeoutMs, QSqlError* error,
                    ConnectionUse use = ConnectionUse::Store);
void closeConnection(const QString& name);  // closes and removes; no QSqlQuery on it may be alive

// Rows read from a file's table leaf pages without SQLite (chat_store_pages.cpp), by rowid.
struct RawMessage {
    StoredMessage message;
    bool blobsComplete = true;  // false: tokens/token records lay past a broken overflow chain
};
struct RawVersion {
    qint64 messageId = 0;
    StoredVersion version;
    bool blobsComplete = true;
};
struct RawRows {
    QHash<qint64, StoredConversation> conversations;
    QHash<qint64, RawMessage> messages;
    QHash<qint64, RawVersion> versions;  // by message_versions rowid
};
RawRows scanLeafPages(const QString& path);

// Recovery (chat_store_recovery.cpp): copies every conversation and message that can be read
// from source into target (empty, same schema), one transaction per conversation, skipping what
// fails. Rows SQLite lists but cannot read are taken from raw (if given); when not even the
// schema can be read, everything raw holds is. The other versions of answers are copied with
// their message, best effort (renumbered when some are lost). Returns what it saw and copied.
struct CopyCounts {
    int conversationsFound = 0;
    int conversationsCopied = 0;
    int messagesFound = 0;
    int messagesCopied = 0;
    int recordsDropped = 0;  // messages copied without their token records (unreadable)
    int titlesLost = 0;      // conversations copied under a placeholder title (their row was unreadable)
    int fromPages = 0;       // conversations and messages taken from raw pages
    int versionsFound = 0;   // other versions of answers listed (of messages that were copied)
    int versionsCopied = 0;
    int versionRecordsDropped = 0;  // versions copied without their token records
    bool versionsDamaged = false;   // the table of versions could not be read to the end: more may be lost
};
CopyCounts copyReadable(const QSqlDatabase& source, const QSqlDatabase& target, const RawRows* raw = nullptr);

// A store's state (ChatStore::Impl is one; the open and recovery code works on this).
struct State {
    QString connectionName;  // unique per instance
    bool connected = false;
    QString path;            // as given to open()
    bool persistent = false;
    int busyTimeoutMs = 2000;
    ChatStore::OpenReport report;
    mutable QString lastError;

    QSqlDatabase db() const { return QSqlDatabase::database(connectionName, false); }
    bool fail(const QString& message) const {
        lastError = message;
        return false;
    }
    std::nullopt_t failNone(const QString& message) const {  // for the calls returning an optional
        lastError = message;
        return std::nullopt;
    }
};

// chat_store_open.cpp: opens path into state (connected on return unless report.ok is false).
ChatStore::OpenReport openStore(State& state, const QString& path);

}  // namespace inferscope::store

namespace inferscope {

struct ChatStore::Impl : store::State {};

}  // namespace inferscope
