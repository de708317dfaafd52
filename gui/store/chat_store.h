#pragma once
// ChatStore: conversations kept in SQLite through Qt SQL (QSQLITE): WAL journal, one transaction
// per completed message, schema versioned with migrations (PRAGMA user_version), FTS5 full-text
// search over all messages (the versions shown). An answer's other versions (regenerated,
// branched) are kept beside it. A damaged or locked database is reported with what was recovered;
// it never crashes the app and never silently starts empty. Deleted text is overwritten in the
// file (secure_delete). Implementation: chat_store*.cpp (open, schema, recovery, pages, export).
//
// Threading: GUI thread only (one QSqlDatabase connection, named per instance).

#include <QByteArray>
#include <QDateTime>
#include <QHash>
#include <QJsonObject>
#include <QList>
#include <QObject>
#include <QString>
#include <QVector>
#include <QtQml/qqmlregistration.h>
#include <memory>
#include <optional>

namespace inferscope {

struct StoredConversation {
    qint64 id = 0;
    QString title;
    QDateTime createdAt;
    QDateTime updatedAt;
    QString modelName;     // the model the conversation was last used with
    QString systemPrompt;
    QString mode;          // "chat" or "completion" (ChatController::modeName / modeFromName)
    QString templateName;  // chat template name ("llama2", "chatml", ...) or "" for automatic
    int messageCount = 0;  // filled by conversations()
    bool operator==(const StoredConversation&) const = default;
};

struct StoredMessage {
    qint64 id = 0;
    qint64 conversationId = 0;
    int position = 0;              // 0-based order within the conversation
    QString role;                  // "user", "assistant" or "system"
    QString content;               // the text shown
    QDateTime createdAt;
    QString finishReason;          // assistant: "eos", "stop", "length", "context_full", "cancelled"
    QJsonObject stats;             // per-message statistics (prefill/decode tokens and rates, TTFT, model, sampler)
    QVector<qint32> tokens;        // the token ids this message contributed to the context (template included)
    QByteArray tokenRecords;       // assistant: encodeStepRecords() of its steps (core/record/step_record_codec.h)
    QJsonObject origin;            // assistant (schema 3): what made it, gui/store/answer_origin_json.h; {}: not kept
    // An answer regenerated or branched has several versions: this row is the one shown, number
    // versionIndex (0-based) of versionCount; the others are ChatStore::versions(id). Filled by
    // messages(); appendMessage() takes versionIndex only together with the other versions.
    int versionIndex = 0;
    int versionCount = 1;
    bool operator==(const StoredMessage&) const = default;
};

// One of an answer's versions that is not shown (the shown one is its StoredMessage).
struct StoredVersion {
    int index = 0;                 // 0-based among all the answer's versions, the shown one included
    QString content;
    QString finishReason;
    QJsonObject stats;
    QVector<qint32> tokens;
    QByteArray tokenRecords;
    QJsonObject origin;            // as StoredMessage::origin
    bool operator==(const StoredVersion&) const = default;
};

struct SearchHit {
    qint64 conversationId = 0;
    qint64 messageId = 0;
    QString conversationTitle;
    QString snippet;  // the matching text with the match marked by [ and ]
    // -1: the answer as shown matched; else the index (among all its versions) of the other
    // version that did, which opening the hit shows.
    int versionIndex = -1;
};

class ChatStore : public QObject {
    Q_OBJECT
    QML_ELEMENT
    QML_UNCREATABLE("The app creates the one ChatStore and hands it to QML.")
    // For QML: whether conversations are saved this session, and what open() had to say.
    Q_PROPERTY(bool persistent READ isPersistent NOTIFY opened)
    Q_PROPERTY(QString openMessage READ openMessage NOTIFY opened)
public:
    struct OpenReport {
        bool ok = false;   // false: the store is unusable (message says why); the app keeps running
        QString message;   // empty when all was well; else what happened (moved aside to X, recovered N of M conversations, locked by ...)
        bool persistent = false;  // false: a memory database for this session only (":memory:", or a fallback the message explains)
        QString movedTo;          // where a damaged file was moved aside ("" if none)
        int conversationsFound = 0;      // conversations seen in a damaged or locked file
        int conversationsRecovered = 0;  // of which copied into the store in use
        int messagesRecovered = 0;
        int versionsRecovered = 0;       // other versions of answers copied (best effort: the message says what was lost)
    };

    explicit ChatStore(QObject* parent = nullptr);
    ~ChatStore() override;

    // Opens (creating and migrating as needed) the database at path; ":memory:" for tests.
    // A damaged file is moved aside and what can be read is recovered into a new one; a locked,
    // unwritable or too new file leaves the store on a memory database for the session (the
    // file untouched, readable conversations copied in). Closes any database open before.
    OpenReport open(const QString& path);
    void close();
    bool isOpen() const;
    QString path() const;       // as given to open()
    bool isPersistent() const;  // false on ":memory:" and on a fallback
    QString openMessage() const;  // the last OpenReport's message
    QString lastError() const;  // of the last failed call

    // How long a statement waits for another connection's lock before giving up (default
    // 2000 ms); applies from the next open().
    void setBusyTimeout(int milliseconds);

    static int schemaVersion();  // PRAGMA user_version of a database this build writes
    // The FTS5 MATCH expression for text a user typed: each term (separated by whitespace or
    // control characters) quoted, so FTS operators and quotes lose their meaning, and prefix-
    // matched; terms ANDed; terms with no letter or digit are dropped. "" when nothing is left (search() then returns nothing).
    static QString toFtsQuery(const QString& userText);

    // Timestamps are kept in UTC with milliseconds; an invalid createdAt/updatedAt means now.
    std::optional<qint64> createConversation(const StoredConversation& conversation);
    bool updateConversation(const StoredConversation& conversation);  // title, model, system prompt, mode, template; touches updatedAt
    bool renameConversation(qint64 id, const QString& title);  // does not touch updatedAt (the sidebar does not reorder)
    bool deleteConversation(qint64 id);  // with its messages
    QList<StoredConversation> conversations() const;  // most recently updated first
    std::optional<StoredConversation> conversation(qint64 id) const;

    // Appends a completed message in one transaction (and touches the conversation's updatedAt).
    // Its position is the next one in the conversation (message.position is not used). With
    // otherVersions it is version message.versionIndex of an answer and they are stored with it,
    // in the same transaction (their indexes checked as by setVersions).
    std::optional<qint64> appendMessage(const StoredMessage& message, const QList<StoredVersion>& otherVersions = {});
    // Replaces the messages at positions >= message.position with this one (and its versions), in
    // one transaction: a regenerated, branched or re-shown answer never leaves the file without it.
    std::optional<qint64> replaceMessagesFrom(const StoredMessage& message, const QList<StoredVersion>& otherVersions = {});
    // Deletes the messages at positions >= position (edit-and-resend, regenerate), with their
    // versions, in one transaction.
    bool truncateConversation(qint64 conversationId, int position);
    QList<StoredMessage> messages(qint64 conversationId) const;

    // Replaces the other versions of message messageId, whose stored row is version shownIndex:
    // the indexes of others with shownIndex must be exactly 0 .. others.size() (so {} and 0
    // makes it a single version again). One transaction; touches the conversation's updatedAt.
    bool setVersions(qint64 messageId, int shownIndex, const QList<StoredVersion>& others);
    QList<StoredVersion> versions(qint64 messageId) const;  // the others, by index ({} on error: lastError)

    // FTS5 query over every message's content (the versions shown, not the others); plain words
    // are matched as prefixes, safely quoted. Best first (bm25); snippets of about 12 words with
    // the matches in [ ].
    QList<SearchHit> search(const QString& query, int limit = 50) const;

    // Exports: Markdown (roles as headings, "(version i of n)" for answers with versions, stats
    // as a line), JSON (everything, with each assistant message's per-token records decoded: id,
    // piece, p, rank, entropy, top candidates with their stage probabilities, and the other
    // versions given in `versions`, by message id, likewise). Written atomically with QSaveFile.
    // Formats are described in chat_store_export.cpp; records that fail to decode become a
    // "token_records_error" field.
    static QString toMarkdown(const StoredConversation& conversation, const QList<StoredMessage>& messages,
                              const QHash<qint64, QList<StoredVersion>>& versions = {});
    static QByteArray toJson(const StoredConversation& conversation, const QList<StoredMessage>& messages,
                             const QHash<qint64, QList<StoredVersion>>& versions = {});
    bool exportConversation(qint64 id, const QString& filePath, const QString& format);  // "markdown" | "json"

signals:
    void conversationsChanged();  // any conversation or message added, changed or removed; a new open()
    void opened();                // open() or close() finished (persistent, openMessage)

private:
    std::optional<qint64> writeMessage(const StoredMessage& message, const QList<StoredVersion>& otherVersions,
                                       bool replaceFromPosition);
    struct Impl;
    std::unique_ptr<Impl> d;
};

}  // namespace inferscope
