// ChatStore schema: connections and migrations. PRAGMA user_version is the schema version; each
// migration turns version N-1 into N in one transaction together with the new user_version, so
// a database is always at a complete version. To change the schema, append a function to
// kMigrations; never edit one that has shipped.
#include <array>

#include "store/chat_store_sql.h"

namespace inferscope::store {
namespace {

bool runAll(const QSqlDatabase& db, std::initializer_list<const char*> statements, QSqlError* error) {
    for (const char* sql : statements) {
        QSqlQuery query(db);
        if (!query.exec(QString::fromUtf8(sql))) {
            *error = query.lastError();
            return false;
        }
    }
    return true;
}

// Version 1: conversations, their messages (the big blobs last, so a damaged overflow page of a
// blob leaves the text readable in recovery), and an external-content FTS5 index over the text
// kept in step by triggers (a foreign-key cascade fires the delete trigger too). AUTOINCREMENT:
// an id is never reused (a regenerated answer is a new id; a stale copy of a row in the file is
// that row, which recovery relies on).
bool createVersion1(const QSqlDatabase& db, QSqlError* error) {
    return runAll(db, {
        R"(CREATE TABLE conversations (
             id            INTEGER PRIMARY KEY AUTOINCREMENT,
             title         TEXT NOT NULL DEFAULT '',
             created_at    TEXT NOT NULL,            -- UTC ISO-8601 with milliseconds
             updated_at    TEXT NOT NULL,
             model_name    TEXT NOT NULL DEFAULT '',
             system_prompt TEXT NOT NULL DEFAULT '',
             mode          TEXT NOT NULL DEFAULT 'chat',
             template_name TEXT NOT NULL DEFAULT ''))",
        "CREATE INDEX conversations_by_updated ON conversations (updated_at, id)",
        R"(CREATE TABLE messages (
             id              INTEGER PRIMARY KEY AUTOINCREMENT,
             conversation_id INTEGER NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
             position        INTEGER NOT NULL,       -- 0-based order within the conversation
             role            TEXT NOT NULL CHECK (role IN ('user', 'assistant', 'system')),
             content         TEXT NOT NULL,
             created_at      TEXT NOT NULL,
             finish_reason   TEXT NOT NULL DEFAULT '',
             stats           TEXT NOT NULL DEFAULT '{}',  -- JSON object
             tokens          BLOB,                   -- little-endian int32 token ids
             token_records   BLOB))",                // encodeStepRecords()
        "CREATE UNIQUE INDEX messages_by_position ON messages (conversation_id, position)",
        R"(CREATE VIRTUAL TABLE messages_fts USING fts5 (
             content, content = 'messages', content_rowid = 'id',
             tokenize = 'unicode61 remove_diacritics 2'))",
        R"(CREATE TRIGGER messages_fts_insert AFTER INSERT ON messages BEGIN
             INSERT INTO messages_fts (rowid, content) VALUES (new.id, new.content);
           END)",
        R"(CREATE TRIGGER messages_fts_delete AFTER DELETE ON messages BEGIN
             INSERT INTO messages_fts (messages_fts, rowid, content) VALUES ('delete', old.id, old.content);
           END)",
        R"(CREATE TRIGGER messages_fts_update AFTER UPDATE OF content ON messages BEGIN
             INSERT INTO messages_fts (messages_fts, rowid, content) VALUES ('delete', old.id, old.content);
             INSERT INTO messages_fts (rowid, content) VALUES (new.id, new.content);
           END)",
    }, error);
}

// Version 2: the other versions of an answer (regenerated, branched). The version shown stays
// the row in messages, so search, exports and recovery of messages work as before; the others
// live here, numbered by idx among all of the answer's versions (0-based), and the shown one's
// number is the one they leave out. Not in messages' FTS index: version 4 gives them their own.
// The unique index finds a message's versions for the cascade (no scan per deleted message)
// and gives recovery a second way to list them; blobs last as in messages.
bool createVersion2(const QSqlDatabase& db, QSqlError* error) {
    return runAll(db, {
        R"(CREATE TABLE message_versions (
             id            INTEGER PRIMARY KEY AUTOINCREMENT,
             message_id    INTEGER NOT NULL REFERENCES messages (id) ON DELETE CASCADE,
             idx           INTEGER NOT NULL CHECK (idx >= 0),  -- 0-based, among all the answer's versions
             content       TEXT NOT NULL,
             finish_reason TEXT NOT NULL DEFAULT '',
             stats         TEXT NOT NULL DEFAULT '{}',  -- JSON object
             tokens        BLOB,                        -- little-endian int32 token ids
             token_records BLOB))",                     // encodeStepRecords()
        "CREATE UNIQUE INDEX message_versions_by_message ON message_versions (message_id, idx)",
    }, error);
}

// Version 3: each answer's origin (gui/store/answer_origin_json.h: the model's file, name and
// vocabulary hash, the backend, the KV cache, where its timings were measured, the text of every
// token its records name), for the row shown and for the other versions. Answers stored before
// keep '{}': the app then infers what their stats say. A column added last (SQLite does not
// rewrite the rows; recovery's page reader takes rows with and without it).
bool createVersion3(const QSqlDatabase& db, QSqlError* error) {
    return runAll(db, {
        "ALTER TABLE messages ADD COLUMN origin TEXT NOT NULL DEFAULT '{}'",
        "ALTER TABLE message_versions ADD COLUMN origin TEXT NOT NULL DEFAULT '{}'",
    }, error);
}

// Version 4: the other versions of answers in a full-text index of their own, kept in step by
// triggers as messages_fts is, and filled from the versions already stored. A search finds words
// that only a regenerated or branched-away version holds; its hit names the version, and opening
// it shows that version (ChatStore::search, SearchHit::versionIndex).
bool createVersion4(const QSqlDatabase& db, QSqlError* error) {
    return runAll(db, {
        R"(CREATE VIRTUAL TABLE message_versions_fts USING fts5 (
             content, content = 'message_versions', content_rowid = 'id',
             tokenize = 'unicode61 remove_diacritics 2'))",
        R"(CREATE TRIGGER message_versions_fts_insert AFTER INSERT ON message_versions BEGIN
             INSERT INTO message_versions_fts (rowid, content) VALUES (new.id, new.content);
           END)",
        R"(CREATE TRIGGER message_versions_fts_delete AFTER DELETE ON message_versions BEGIN
             INSERT INTO message_versions_fts (message_versions_fts, rowid, content) VALUES ('delete', old.id, old.content);
           END)",
        R"(CREATE TRIGGER message_versions_fts_update AFTER UPDATE OF content ON message_versions BEGIN
             INSERT INTO message_versions_fts (message_versions_fts, rowid, content) VALUES ('delete', old.id, old.content);
             INSERT INTO message_versions_fts (rowid, content) VALUES (new.id, new.content);
           END)",
        "INSERT INTO message_versions_fts (message_versions_fts) VALUES ('rebuild')",
    }, error);
}

using Migration = bool (*)(const QSqlDatabase&, QSqlError*);
constexpr std::array<Migration, 4> kMigrations{&createVersion1, &createVersion2, &createVersion3, &createVersion4};  // [i] makes version i + 1

}  // namespace

int knownSchemaVersion() {
    return int(kMigrations.size());
}

bool migrate(const QSqlDatabase& db, int fromVersion, QSqlError* error, QString* failedStep) {
    for (int version = fromVersion + 1; version <= knownSchemaVersion(); ++version) {
        *failedStep = QStringLiteral("upgrading it to schema version %1").arg(version);
        WriteTransaction transaction(db);
        if (!transaction.began()) {
            *error = transaction.error();
            return false;
        }
        if (!kMigrations[size_t(version - 1)](db, error)) return false;  // rolled back
        QSqlQuery query(db);
        if (!query.exec(QStringLiteral("PRAGMA user_version = %1").arg(version))) {
            *error = query.lastError();
            return false;
        }
        if (!transaction.commit()) {
            *error = transaction.error();
            return false;
        }
    }
    failedStep->clear();
    return true;
}

bool openConnection(const QString& name, const QString& file, int busyTimeoutMs, QSqlError* error,
                    ConnectionUse use) {
    {
        QSqlDatabase db = QSqlDatabase::addDatabase(QStringLiteral("QSQLITE"), name);
        db.setDatabaseName(file);
        db.setConnectOptions(QStringLiteral("QSQLITE_BUSY_TIMEOUT=%1").arg(busyTimeoutMs));
        bool ok = db.open();
        if (!ok) *error = db.lastError();
        // Wait for locks; cascades on; durable commits (WAL + FULL fsyncs each commit); deleted
        // text overwritten with zeros (a deleted conversation is gone from the file, and
        // recovery's page scan finds no stale rows on freed pages).
        for (const QString& pragma : {QStringLiteral("PRAGMA busy_timeout = %1").arg(busyTimeoutMs),
                                      QStringLiteral("PRAGMA foreign_keys = ON"),
                                      QStringLiteral("PRAGMA synchronous = FULL"),
                                      QStringLiteral("PRAGMA secure_delete = ON")}) {
            if (!ok || use == ConnectionUse::RecoverySource) break;
            QSqlQuery query(db);
            ok = query.exec(pragma);
            if (!ok) *error = query.lastError();
        }
        if (ok) return true;
        db.close();
    }
    QSqlDatabase::removeDatabase(name);
    return false;
}

void closeConnection(const QString& name) {
    {
        QSqlDatabase db = QSqlDatabase::database(name, false);
        if (db.isOpen()) db.close();
    }
    QSqlDatabase::removeDatabase(name);
}

}  // namespace inferscope::store
