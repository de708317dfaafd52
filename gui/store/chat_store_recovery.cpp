// Recovery: copy every conversation and message that can still be read out of a damaged (or
// locked) database, conversation by conversation, message by message, skipping what errors.
//
// A damaged page ends a b-tree scan with SQLITE_CORRUPT, but every row read before it is good,
// so each table is listed several ways — scanned from both ends, and through its indexes (separate
// b-trees that often survive damage to table pages) — and each listed row is then read alone by
// its id. A message whose blobs cannot be read keeps its text; token records that no longer
// decode are dropped rather than copied as garbage. Rows that SQLite lists but cannot reach (a
// damaged interior page above intact leaves) are read from the leaf pages themselves. The other
// versions of answers (schema 2) are recovered the same way, best effort: the ones that survive
// are renumbered densely around the version shown (see copyVersions).
#include <map>
#include <set>

#include "store/chat_store_sql.h"
#include "record/step_record_codec.h"

namespace inferscope::store {
namespace {

// Runs a listing and hands over each row read before the first error (if any); true if it
// read to the end.
template <class RowFn>
bool collect(const QSqlDatabase& db, const QString& sql, RowFn&& onRow) {
    QSqlQuery query(db);
    query.setForwardOnly(true);
    if (!query.exec(sql)) return false;
    while (query.next()) onRow(query);
    return !query.lastError().isValid();
}

std::optional<StoredConversation> readConversationAlone(const QSqlDatabase& db, qint64 id) {
    QSqlQuery query(db);
    query.setForwardOnly(true);
    if (!run(query, QStringLiteral("SELECT %1 FROM conversations c WHERE c.id = ?").arg(kConversationColumns), {id}) ||
        !query.next())
        return std::nullopt;
    return readConversation(query);
}

bool recordsDecode(const QByteArray& records) {
    const auto* bytes = reinterpret_cast<const uint8_t*>(records.constData());
    return decodeStepRecords({bytes, size_t(records.size())}).has_value();
}

struct Salvaged {
    StoredMessage message;
    bool recordsDropped = false;
};

// Drops what cannot be a row we wrote, and token records that no longer decode.
std::optional<Salvaged> validated(Salvaged salvaged) {
    const QString& role = salvaged.message.role;
    if (role != QLatin1String("user") && role != QLatin1String("assistant") && role != QLatin1String("system"))
        return std::nullopt;
    if (!salvaged.message.tokenRecords.isEmpty() && !recordsDecode(salvaged.message.tokenRecords)) {
        salvaged.message.tokenRecords.clear();
        salvaged.recordsDropped = true;
    }
    return salvaged;
}

// A row's origin (schema 3), best effort: a file of an earlier schema has none, a damaged one may
// have lost it ({}: the app infers what the answer's stats say).
QJsonObject readOriginAlone(const QSqlDatabase& db, const QString& table, qint64 id) {
    QSqlQuery query(db);
    query.setForwardOnly(true);
    if (run(query, QStringLiteral("SELECT origin FROM %1 WHERE id = ?").arg(table), {id}) && query.next() &&
        !query.lastError().isValid())
        return statsFromText(query.value(0).toString());
    return {};
}

// The whole row if it reads; else its text columns and, separately, its tokens.
std::optional<Salvaged> readMessageAlone(const QSqlDatabase& db, qint64 id) {
    Salvaged salvaged;
    bool blobsRead = false;
    {
        QSqlQuery query(db);
        query.setForwardOnly(true);
        if (run(query, QStringLiteral("SELECT %1 FROM messages m WHERE m.id = ?").arg(kMessageColumns), {id}) &&
            query.next() && !query.lastError().isValid()) {
            salvaged.message = readMessage(query, true);
            blobsRead = unpackTokens(query.value(8).toByteArray()).has_value();
        }
    }
    if (!blobsRead) {
        QSqlQuery query(db);
        query.setForwardOnly(true);
        if (!run(query, QStringLiteral("SELECT %1 FROM messages m WHERE m.id = ?").arg(kMessageTextColumns), {id}) ||
            !query.next())
            return std::nullopt;
        salvaged.message = readMessage(query, false);
        QSqlQuery tokens(db);
        if (run(tokens, QStringLiteral("SELECT tokens FROM messages WHERE id = ?"), {id}) && tokens.next())
            salvaged.message.tokens = unpackTokens(tokens.value(0).toByteArray()).value_or(QVector<qint32>{});
        salvaged.recordsDropped = salvaged.message.role == QLatin1String("assistant");
    }
    salvaged.message.origin = readOriginAlone(db, QStringLiteral("messages"), id);
    return validated(salvaged);
}

std::optional<Salvaged> fromPages(const RawRows* raw, qint64 id) {
    if (!raw || !raw->messages.contains(id)) return std::nullopt;
    const RawMessage& row = raw->messages[id];
    Salvaged salvaged{row.message, !row.blobsComplete && row.message.role == QLatin1String("assistant")};
    if (!row.blobsComplete) salvaged.message.tokenRecords.clear();
    return validated(salvaged);
}

struct SalvagedVersion {
    qint64 id = 0;
    qint64 messageId = 0;
    StoredVersion version;
    bool recordsDropped = false;
};

// The whole row if it reads; else its text without tokens and records; else the pages' copy.
std::optional<SalvagedVersion> readVersionAlone(const QSqlDatabase& db, const RawRows* raw, qint64 id) {
    SalvagedVersion s;
    s.id = id;
    QSqlQuery whole(db), text(db);
    whole.setForwardOnly(true);
    text.setForwardOnly(true);
    if (run(whole, QStringLiteral("SELECT %1 FROM message_versions v WHERE v.id = ?").arg(kVersionColumns), {id}) &&
        whole.next() && !whole.lastError().isValid() && unpackTokens(whole.value(6).toByteArray())) {
        s.messageId = whole.value(1).toLongLong();
        s.version = readVersion(whole, true);
        s.version.origin = readOriginAlone(db, QStringLiteral("message_versions"), id);
    } else if (run(text, QStringLiteral("SELECT v.id, v.message_id, v.idx, v.content, v.finish_reason, v.stats "
                                        "FROM message_versions v WHERE v.id = ?"), {id}) &&
               text.next() && !text.lastError().isValid()) {
        s.messageId = text.value(1).toLongLong();
        s.version = readVersion(text, false);
        s.recordsDropped = true;
    } else if (raw && raw->versions.contains(id)) {
        const RawVersion& row = raw->versions[id];
        s.messageId = row.messageId;
        s.version = row.version;
        s.recordsDropped = !row.blobsComplete;
        if (!row.blobsComplete) s.version.tokenRecords.clear();
    } else {
        return std::nullopt;
    }
    if (s.version.index < 0) return std::nullopt;
    if (!s.version.tokenRecords.isEmpty() && !recordsDecode(s.version.tokenRecords)) {
        s.version.tokenRecords.clear();
        s.recordsDropped = true;
    }
    return s;
}

// Copies the versions (row ids) of a copied message. Indexes are made dense again around the
// version shown: it is taken to be where the smallest index is missing, which is exact when
// nothing was lost before it (else it moves earlier among the survivors; their order is kept).
void copyVersions(const QSqlDatabase& source, const QSqlDatabase& target, const RawRows* raw, qint64 messageId,
                  const std::set<qint64>& ids, CopyCounts& counts) {
    QList<SalvagedVersion> found;
    for (const qint64 id : ids)
        if (std::optional<SalvagedVersion> s = readVersionAlone(source, raw, id); s && s->messageId == messageId)
            found.append(*s);
    std::sort(found.begin(), found.end(), [](const SalvagedVersion& a, const SalvagedVersion& b) {
        return std::pair(a.version.index, a.id) < std::pair(b.version.index, b.id);
    });
    found.erase(std::unique(found.begin(), found.end(), [](const SalvagedVersion& a, const SalvagedVersion& b) {
        return a.version.index == b.version.index;
    }), found.end());
    QList<int> indexes;
    for (const SalvagedVersion& s : found) indexes.append(s.version.index);
    const int shown = shownIndexAmong(indexes);
    int next = 0;
    for (SalvagedVersion& s : found) {
        if (next == shown) ++next;
        s.version.index = next;
        QSqlError error;
        if (!insertVersion(target, s.id, messageId, s.version, &error)) {
            // the statement alone is rolled back; the ones after it close the gap
            continue;
        }
        ++next;
        ++counts.versionsCopied;
        counts.versionRecordsDropped += s.recordsDropped ? 1 : 0;
    }
}

}  // namespace

CopyCounts copyReadable(const QSqlDatabase& source, const QSqlDatabase& target, const RawRows* raw) {
    CopyCounts counts;
    std::set<qint64> conversationIds;
    std::map<qint64, std::set<qint64>> messageIds;  // conversation id -> message ids
    const auto addConversation = [&](const QSqlQuery& q) { conversationIds.insert(q.value(0).toLongLong()); };
    const auto addMessage = [&](const QSqlQuery& q) {
        conversationIds.insert(q.value(0).toLongLong());
        messageIds[q.value(0).toLongLong()].insert(q.value(1).toLongLong());
    };
    for (const char* order : {"ASC", "DESC"}) {
        const QString o = QLatin1String(order);
        collect(source, QStringLiteral("SELECT id FROM conversations NOT INDEXED ORDER BY id %1").arg(o), addConversation);
        collect(source, QStringLiteral("SELECT id FROM conversations INDEXED BY conversations_by_updated "
                                       "ORDER BY updated_at %1, id %1").arg(o), addConversation);
        collect(source, QStringLiteral("SELECT conversation_id, id FROM messages NOT INDEXED ORDER BY id %1").arg(o),
                addMessage);
        collect(source, QStringLiteral("SELECT conversation_id, id FROM messages INDEXED BY messages_by_position "
                                       "ORDER BY conversation_id %1, position %1").arg(o), addMessage);
    }
    // The other versions of answers: complete if any one listing reads to the end.
    std::map<qint64, std::set<qint64>> versionIds;  // message id -> version row ids
    const auto addVersion = [&](const QSqlQuery& q) { versionIds[q.value(0).toLongLong()].insert(q.value(1).toLongLong()); };
    bool versionsListed = false;
    for (const char* order : {"ASC", "DESC"}) {
        const QString o = QLatin1String(order);
        versionsListed |= collect(source, QStringLiteral("SELECT message_id, id FROM message_versions NOT INDEXED "
                                                         "ORDER BY id %1").arg(o), addVersion);
        versionsListed |= collect(source, QStringLiteral("SELECT message_id, id FROM message_versions INDEXED BY "
                                                         "message_versions_by_message ORDER BY message_id %1, idx %1").arg(o),
                                  addVersion);
    }

    // Without a readable schema nothing could be listed, so whatever the pages hold is taken.
    // Otherwise only rows listed above (alive in the database) are filled in from the pages:
    // freed pages are zeroed (secure_delete) and ids are never reused (AUTOINCREMENT), so the
    // pages' copy of a listed row is that row.
    if (raw && !scalar(source, QStringLiteral("SELECT count(*) FROM sqlite_schema")).isValid()) {
        for (auto it = raw->conversations.begin(); it != raw->conversations.end(); ++it) conversationIds.insert(it.key());
        for (auto it = raw->messages.begin(); it != raw->messages.end(); ++it) {
            conversationIds.insert(it->message.conversationId);
            messageIds[it->message.conversationId].insert(it.key());
        }
        for (auto it = raw->versions.begin(); it != raw->versions.end(); ++it) versionIds[it->messageId].insert(it.key());
        versionsListed = true;  // as far as anyone can tell
    } else if (!versionsListed) {
        // A schema 1 file has no versions to lose; a listed table that could not be read has.
        versionsListed = scalar(source, QStringLiteral("SELECT count(*) FROM sqlite_schema WHERE name = 'message_versions'"))
                             .toInt() == 0;
    }
    counts.versionsDamaged = !versionsListed;

    counts.conversationsFound = int(conversationIds.size());
    for (const auto& [conversationId, ids] : messageIds) counts.messagesFound += int(ids.size());

    for (const qint64 conversationId : conversationIds) {
        int fromPagesHere = 0;
        std::optional<StoredConversation> conversation = readConversationAlone(source, conversationId);
        if (!conversation && raw && raw->conversations.contains(conversationId)) {
            conversation = raw->conversations[conversationId];
            ++fromPagesHere;
        }
        QList<Salvaged> messages;
        for (const qint64 messageId : messageIds[conversationId]) {
            std::optional<Salvaged> salvaged = readMessageAlone(source, messageId);
            if (!salvaged && (salvaged = fromPages(raw, messageId))) ++fromPagesHere;
            if (salvaged && salvaged->message.conversationId == conversationId) messages.append(*salvaged);
        }
        if (!conversation && messages.isEmpty()) continue;  // nothing of it is readable
        std::sort(messages.begin(), messages.end(), [](const Salvaged& a, const Salvaged& b) {
            return std::pair(a.message.position, a.message.id) < std::pair(b.message.position, b.message.id);
        });
        const bool placeholder = !conversation;
        if (placeholder) {  // its row is lost but messages remain: keep them under a placeholder
            conversation = StoredConversation{};
            conversation->id = conversationId;
            conversation->title = QStringLiteral("Recovered conversation %1").arg(conversationId);
            conversation->mode = QStringLiteral("chat");
        }
        const QDateTime now = QDateTime::currentDateTimeUtc();
        if (!conversation->createdAt.isValid())
            conversation->createdAt = messages.isEmpty() ? now : messages.first().message.createdAt;
        if (!conversation->createdAt.isValid()) conversation->createdAt = now;
        if (!conversation->updatedAt.isValid()) conversation->updatedAt = conversation->createdAt;

        WriteTransaction transaction(target);
        QSqlError error;
        if (!transaction.began() || !insertConversation(target, *conversation, &error)) continue;
        int copied = 0, dropped = 0;
        CopyCounts versions;
        for (Salvaged& salvaged : messages) {
            StoredMessage& m = salvaged.message;
            m.position = copied;  // dense again where messages were lost
            if (!m.createdAt.isValid()) m.createdAt = conversation->createdAt;
            if (!insertMessage(target, m, &error)) continue;  // the statement alone is rolled back
            ++copied;
            dropped += salvaged.recordsDropped ? 1 : 0;
            if (const auto it = versionIds.find(m.id); it != versionIds.end()) {
                versions.versionsFound += int(it->second.size());
                copyVersions(source, target, raw, m.id, it->second, versions);
            }
        }
        if (!transaction.commit()) continue;
        counts.versionsFound += versions.versionsFound;
        counts.versionsCopied += versions.versionsCopied;
        counts.versionRecordsDropped += versions.versionRecordsDropped;
        ++counts.conversationsCopied;
        counts.messagesCopied += copied;
        counts.recordsDropped += dropped;
        counts.titlesLost += placeholder ? 1 : 0;
        counts.fromPages += fromPagesHere;
    }
    return counts;
}

}  // namespace inferscope::store
