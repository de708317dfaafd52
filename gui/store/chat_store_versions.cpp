// ChatStore: the other versions of answers (schema version 2, table message_versions). The
// version shown is the row in messages — search, exports and recovery of messages do not need
// to know about versions — and each other version is a row here with its index among all of the
// answer's versions. The shown one's index is not stored: it is the one the others leave out,
// which every write checks, so the two can never disagree.
#include <set>

#include "store/chat_store_sql.h"

namespace inferscope {

using namespace store;

namespace store {

const QString kVersionColumns = QStringLiteral(
    "v.id, v.message_id, v.idx, v.content, v.finish_reason, v.stats, v.tokens, v.token_records");
const QString kVersionColumnsWithOrigin = kVersionColumns + QStringLiteral(", v.origin");

StoredVersion readVersion(const QSqlQuery& query, bool withBlobs) {
    StoredVersion v;
    v.index = query.value(2).toInt();
    v.content = query.value(3).toString();
    v.finishReason = query.value(4).toString();
    v.stats = statsFromText(query.value(5).toString());
    if (withBlobs) {
        v.tokens = unpackTokens(query.value(6).toByteArray()).value_or(QVector<qint32>{});
        v.tokenRecords = query.value(7).toByteArray();
        if (query.record().count() > 8) v.origin = statsFromText(query.value(8).toString());
    }
    return v;
}

bool insertVersion(const QSqlDatabase& db, qint64 id, qint64 messageId, const StoredVersion& v, QSqlError* error) {
    QSqlQuery query(db);
    const bool ok = run(query,
        QStringLiteral("INSERT INTO message_versions (id, message_id, idx, content, finish_reason, stats, tokens, "
                       "token_records, origin) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"),
        {id > 0 ? QVariant(id) : QVariant(), messageId, v.index, text(v.content), text(v.finishReason),
         statsToText(v.stats), packTokens(v.tokens), v.tokenRecords, statsToText(v.origin)});
    if (!ok && error) *error = query.lastError();
    return ok;
}

bool versionIndexesValid(int shownIndex, const QList<StoredVersion>& others) {
    std::set<int> seen{shownIndex};
    for (const StoredVersion& v : others) seen.insert(v.index);
    return int(seen.size()) == others.size() + 1 && *seen.begin() == 0 && *seen.rbegin() == int(others.size());
}

int shownIndexAmong(QList<int> otherIndexes) {
    std::sort(otherIndexes.begin(), otherIndexes.end());
    int gap = 0;
    for (const int index : otherIndexes) {
        if (index > gap) break;
        if (index == gap) ++gap;
    }
    return gap;
}

bool writeVersions(const QSqlDatabase& db, qint64 messageId, const QList<StoredVersion>& others, QSqlError* error) {
    QSqlQuery query(db);
    if (!run(query, QStringLiteral("DELETE FROM message_versions WHERE message_id = ?"), {messageId})) {
        *error = query.lastError();
        return false;
    }
    for (const StoredVersion& v : others)
        if (!insertVersion(db, 0, messageId, v, error)) return false;
    return true;
}

bool fillVersionNumbers(const QSqlDatabase& db, qint64 conversationId, QList<StoredMessage>& messages, QSqlError* error) {
    QSqlError failed;
    const auto pairs = selectRows(db,
                                  QStringLiteral("SELECT v.message_id, v.idx FROM message_versions v JOIN messages m "
                                                 "ON m.id = v.message_id WHERE m.conversation_id = ?"),
                                  {conversationId}, [](const QSqlQuery& query) {
                                      return std::pair(query.value(0).toLongLong(), query.value(1).toInt());
                                  }, &failed);
    if (failed.isValid()) {
        *error = failed;
        return false;
    }
    QHash<qint64, QList<int>> others;  // message id -> indexes of its other versions
    for (const auto& [message, index] : pairs) others[message].append(index);
    for (StoredMessage& m : messages) {
        const QList<int> indexes = others.value(m.id);
        m.versionCount = int(indexes.size()) + 1;
        m.versionIndex = shownIndexAmong(indexes);
    }
    return true;
}

}  // namespace store

bool ChatStore::setVersions(qint64 messageId, int shownIndex, const QList<StoredVersion>& others) {
    if (!isOpen()) return d->fail(notOpenMessage());
    const QString what = tr("Could not save the versions of the answer: ");
    if (!versionIndexesValid(shownIndex, others))
        return d->fail(what + tr("the shown version %1 and the others must be numbered 0 to %2 once each")
                                  .arg(shownIndex).arg(others.size()));
    const QSqlDatabase db = d->db();
    WriteTransaction transaction(db);
    if (!transaction.began()) return d->fail(what + errorText(transaction.error()));
    QSqlQuery touch(db);
    if (!run(touch, QStringLiteral("UPDATE conversations SET updated_at = ? WHERE id = "
                                   "(SELECT conversation_id FROM messages WHERE id = ?)"),
             {toStoredTime(QDateTime::currentDateTimeUtc()), messageId}))
        return d->fail(what + errorText(touch.lastError()));
    if (touch.numRowsAffected() < 1) return d->fail(what + tr("no message %1").arg(messageId));
    touch.finish();
    QSqlError error;
    if (!writeVersions(db, messageId, others, &error)) return d->fail(what + errorText(error));
    if (!transaction.commit()) return d->fail(what + errorText(transaction.error()));
    emit conversationsChanged();
    return true;
}

QList<StoredVersion> ChatStore::versions(qint64 messageId) const {
    if (!isOpen()) {
        d->fail(notOpenMessage());
        return {};
    }
    QSqlError error;
    auto result = selectRows(d->db(),
                             QStringLiteral("SELECT %1 FROM message_versions v WHERE v.message_id = ? ORDER BY v.idx").arg(kVersionColumnsWithOrigin),
                             {messageId}, [](const QSqlQuery& query) { return readVersion(query); }, &error);
    if (error.isValid()) d->fail(tr("Could not read the versions of the answer: %1").arg(errorText(error)));
    return result;
}

}  // namespace inferscope
