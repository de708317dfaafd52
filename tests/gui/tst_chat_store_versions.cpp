// ChatStore: the other versions of answers (schema version 2) — round trips of every field, the
// index rules, one transaction per write, cascades with deleted text gone from the file, search
// over the shown versions only, and a real schema-1 file (tests/data/chat_store_v1.db, written
// by the version-1 code) migrated in one transaction.
#include <QJsonArray>
#include <QJsonDocument>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QSet>
#include <QTest>

#include "store/answer_origin_json.h"
#include "chat/conversation_mapper.h"
#include "tst_chat_store_helpers.h"

using namespace inferscope;
using namespace inferscope::testing;

namespace {

// Version `index` of an answer: its own text, finish reason, stats, tokens and step records.
StoredVersion version(int index, const QString& text, int nSteps = 3) {
    const StoredMessage m = assistantMessage(0, text, nSteps, 4);
    StoredVersion v;
    v.index = index;
    v.content = text;
    v.finishReason = index % 2 ? QStringLiteral("length") : QStringLiteral("stop");
    v.stats = QJsonObject{{QStringLiteral("seed"), QStringLiteral("%1").arg(1000 + index)},
                          {QStringLiteral("branchedAt"), index}};
    v.tokens = m.tokens;
    v.tokens.append(2);  // the end-of-turn token
    v.tokenRecords = m.tokenRecords;
    return v;
}

QStringList schemaOf(const QString& path, const QString& connection) {
    RawConnection raw(path, connection);
    QSqlQuery query(raw.db());
    QStringList rows;
    query.exec(QStringLiteral("SELECT type, name, tbl_name, sql FROM sqlite_schema ORDER BY name"));
    while (query.next())
        rows << QStringList{query.value(0).toString(), query.value(1).toString(), query.value(2).toString(),
                            query.value(3).toString()}.join(QLatin1Char('|'));
    return rows;
}

// A writable copy of a schema-N file of tests/data in dir.
QString copyOfVersion(int version, const QTemporaryDir& dir, const QString& name) {
    const QString path = dir.filePath(name);
    if (!QFile::copy(QStringLiteral(INFERSCOPE_TEST_DATA_DIR "/chat_store_v%1.db").arg(version), path)) return {};
    QFile::setPermissions(path, QFileDevice::ReadOwner | QFileDevice::WriteOwner);
    return path;
}

}  // namespace

class TestChatStoreVersions : public QObject {
    Q_OBJECT
private slots:
    void roundTrip();
    void setVersionsReplaces();
    void badIndexesAreRefused();
    void writesAreOneTransaction();
    void truncateAndDeleteTakeVersionsAlong();
    void replaceMessagesFromIsOneTransaction();
    void searchFindsEveryVersion();
    void versionsStoredBeforeTheirIndexAreFound();
    void closedStore();
    void migratesARealVersion1File();
    void failedVersion2MigrationRollsBack();
    void migratesARealVersion2File();

private:
    QTemporaryDir dir_;
    QString file(const QString& name) const { return dir_.filePath(name); }
};

void TestChatStoreVersions::roundTrip() {
    ChatStore store;
    QVERIFY(store.open(QStringLiteral(":memory:")).ok);
    const qint64 cid = *store.createConversation({});
    QVERIFY(store.appendMessage(userMessage(cid, QStringLiteral("tell a story"))));
    StoredMessage shown = assistantMessage(cid, QStringLiteral("the second telling"), 5, 6);
    shown.versionIndex = 1;
    shown.versionCount = 99;  // not used: the count is what is stored
    const QList<StoredVersion> others{version(0, QStringLiteral("the first telling"), 4),
                                      version(2, QStringLiteral("the third telling"), 7)};
    const std::optional<qint64> id = store.appendMessage(shown, others);
    QVERIFY2(id, qPrintable(store.lastError()));

    const QList<StoredMessage> list = store.messages(cid);
    QCOMPARE(list.size(), 2);
    QCOMPARE(list[0].versionIndex, 0);
    QCOMPARE(list[0].versionCount, 1);
    QCOMPARE(list[1].id, *id);
    QCOMPARE(list[1].content, shown.content);
    QCOMPARE(list[1].tokenRecords, shown.tokenRecords);
    QCOMPARE(list[1].versionIndex, 1);
    QCOMPARE(list[1].versionCount, 3);
    const QList<StoredVersion> back = store.versions(*id);
    QCOMPARE(back, others);  // every field, in index order
    const auto steps = decodeStepRecords({reinterpret_cast<const uint8_t*>(back[1].tokenRecords.constData()),
                                          size_t(back[1].tokenRecords.size())});
    QVERIFY(steps);
    QCOMPARE(steps->size(), size_t(7));
    QVERIFY(store.versions(list[0].id).isEmpty());
    QVERIFY(store.versions(*id + 100).isEmpty());

    // Without other versions, versionIndex means nothing: a single version, index 0.
    StoredMessage single = assistantMessage(cid, QStringLiteral("alone"));
    single.versionIndex = 4;
    const std::optional<qint64> alone = store.appendMessage(single);
    QVERIFY(alone);
    QCOMPARE(store.messages(cid).last().versionIndex, 0);
    QCOMPARE(store.messages(cid).last().versionCount, 1);
}

void TestChatStoreVersions::setVersionsReplaces() {
    ChatStore store;
    QVERIFY(store.open(QStringLiteral(":memory:")).ok);
    const qint64 cid = *store.createConversation({});
    const qint64 id = *store.appendMessage(assistantMessage(cid, QStringLiteral("shown")));
    const QDateTime before = store.conversation(cid)->updatedAt;
    QTRY_VERIFY(QDateTime::currentDateTimeUtc() > before);  // the clock has moved on: a new updatedAt differs
    QSignalSpy changed(&store, &ChatStore::conversationsChanged);
    const QList<StoredVersion> three{version(0, QStringLiteral("a")), version(1, QStringLiteral("b")),
                                     version(3, QStringLiteral("d"))};
    QVERIFY2(store.setVersions(id, 2, three), qPrintable(store.lastError()));
    QCOMPARE(changed.count(), 1);
    QVERIFY(store.conversation(cid)->updatedAt > before);
    QCOMPARE(store.versions(id), three);
    QCOMPARE(store.messages(cid)[0].versionIndex, 2);
    QCOMPARE(store.messages(cid)[0].versionCount, 4);

    const QList<StoredVersion> one{version(1, QStringLiteral("after"))};
    QVERIFY(store.setVersions(id, 0, one));  // replaces all of them
    QCOMPARE(store.versions(id), one);
    QCOMPARE(store.messages(cid)[0].versionIndex, 0);
    QCOMPARE(store.messages(cid)[0].versionCount, 2);

    QVERIFY(store.setVersions(id, 0, {}));  // a single version again
    QVERIFY(store.versions(id).isEmpty());
    QCOMPARE(store.messages(cid)[0].versionCount, 1);
    QCOMPARE(store.messages(cid)[0].content, QStringLiteral("shown"));  // the row itself is untouched
}

void TestChatStoreVersions::badIndexesAreRefused() {
    ChatStore store;
    QVERIFY(store.open(QStringLiteral(":memory:")).ok);
    const qint64 cid = *store.createConversation({});
    const qint64 id = *store.appendMessage(assistantMessage(cid, QStringLiteral("shown")));
    const QList<StoredVersion> kept{version(1, QStringLiteral("kept"))};
    QVERIFY(store.setVersions(id, 0, kept));
    const auto a = [](int i) { return version(i, QStringLiteral("v%1").arg(i)); };
    const QList<std::pair<int, QList<StoredVersion>>> bad{
        {0, {a(0)}},        // the shown index among the others
        {0, {a(1), a(1)}},  // twice the same
        {0, {a(2)}},        // a gap
        {-1, {a(0)}},       // negative
        {1, {a(-1)}},
        {3, {}},            // past the end
    };
    for (const auto& [shown, others] : bad) {
        QVERIFY(!store.setVersions(id, shown, others));
        QVERIFY2(store.lastError().contains(QStringLiteral("numbered 0 to %1").arg(others.size())), qPrintable(store.lastError()));
        StoredMessage m = assistantMessage(cid, QStringLiteral("not appended"));
        m.versionIndex = shown;
        if (!others.isEmpty()) QVERIFY(!store.appendMessage(m, others));
    }
    QVERIFY(!store.setVersions(id + 1, 0, kept));  // no such message
    QVERIFY2(store.lastError().contains(QStringLiteral("no message %1").arg(id + 1)), qPrintable(store.lastError()));
    QCOMPARE(store.versions(id), kept);
    QCOMPARE(store.messages(cid).size(), 1);
}

void TestChatStoreVersions::writesAreOneTransaction() {
    // A trigger (another program's, say) makes the insert of one version fail after the
    // message row was written: nothing of the write may remain.
    const QString path = file(QStringLiteral("atomic.db"));
    ChatStore store;
    QVERIFY(store.open(path).persistent);
    const qint64 cid = *store.createConversation({});
    const qint64 id = *store.appendMessage(assistantMessage(cid, QStringLiteral("shown")), {version(1, QStringLiteral("old"))});
    {
        RawConnection raw(path);
        QString error;
        raw.exec(QStringLiteral("CREATE TRIGGER refuse BEFORE INSERT ON message_versions WHEN new.content = 'boom' "
                                "BEGIN SELECT RAISE(ABORT, 'refused'); END"), &error);
        QVERIFY2(error.isEmpty(), qPrintable(error));
    }
    StoredMessage next = assistantMessage(cid, QStringLiteral("next"));
    next.versionIndex = 2;
    QVERIFY(!store.appendMessage(next, {version(0, QStringLiteral("fine")), version(1, QStringLiteral("boom"))}));
    QVERIFY2(store.lastError().contains(QStringLiteral("refused")), qPrintable(store.lastError()));
    QCOMPARE(store.messages(cid).size(), 1);  // the message row was rolled back with it
    QVERIFY(!store.setVersions(id, 0, {version(1, QStringLiteral("boom"))}));
    QCOMPARE(store.versions(id), (QList<StoredVersion>{version(1, QStringLiteral("old"))}));  // the delete too
    RawConnection raw(path, QStringLiteral("count"));
    QCOMPARE(raw.exec(QStringLiteral("SELECT count(*) FROM message_versions")).toInt(), 1);
}

void TestChatStoreVersions::truncateAndDeleteTakeVersionsAlong() {
    const QString path = file(QStringLiteral("cascade.db"));
    const QString gone = QStringLiteral("vanishing-version-text");
    {
        ChatStore store;
        QVERIFY(store.open(path).persistent);
        const qint64 a = *store.createConversation({});
        const qint64 b = *store.createConversation({});
        for (const qint64 cid : {a, b}) {
            QVERIFY(store.appendMessage(userMessage(cid, QStringLiteral("q"))));
            QVERIFY(store.appendMessage(assistantMessage(cid, QStringLiteral("shown")),
                                        {version(1, gone + QStringLiteral("-1")), version(2, gone + QStringLiteral("-2"))}));
            QVERIFY(store.appendMessage(userMessage(cid, QStringLiteral("q2"))));
            StoredMessage second = assistantMessage(cid, QStringLiteral("kept"));
            second.versionIndex = 1;
            QVERIFY(store.appendMessage(second, {version(0, QStringLiteral("kept-0"))}));
        }
        RawConnection raw(path);
        QCOMPARE(raw.exec(QStringLiteral("SELECT count(*) FROM message_versions")).toInt(), 6);
        raw.exec(QStringLiteral("PRAGMA wal_checkpoint(TRUNCATE)"));  // the text is in the file itself now
        QVERIFY(readAll(path).contains(gone.toUtf8()));
        QVERIFY(store.truncateConversation(a, 1));  // from the first answer on
        QCOMPARE(raw.exec(QStringLiteral("SELECT count(*) FROM message_versions")).toInt(), 3);
        QVERIFY(store.deleteConversation(b));
        QCOMPARE(raw.exec(QStringLiteral("SELECT count(*) FROM message_versions")).toInt(), 0);
        QCOMPARE(store.messages(a).size(), 1);
    }
    // secure_delete: the deleted versions' text is not left in the file.
    QVERIFY(!QFile::exists(path + QStringLiteral("-wal")));
    QVERIFY(!readAll(path).contains(gone.toUtf8()));
}

void TestChatStoreVersions::replaceMessagesFromIsOneTransaction() {
    // A regenerated answer replaces the stored one (and what came after it) in one write; when the
    // write fails, the old messages are all still there.
    const QString path = file(QStringLiteral("replace.db"));
    ChatStore store;
    QVERIFY(store.open(path).persistent);
    const qint64 cid = *store.createConversation({});
    QVERIFY(store.appendMessage(userMessage(cid, QStringLiteral("q"))));
    QVERIFY(store.appendMessage(assistantMessage(cid, QStringLiteral("first answer"))));
    QVERIFY(store.appendMessage(userMessage(cid, QStringLiteral("q2"))));
    StoredMessage again = assistantMessage(cid, QStringLiteral("second answer"));
    again.position = 1;
    again.versionIndex = 1;
    QVERIFY(store.replaceMessagesFrom(again, {version(0, QStringLiteral("first answer"))}));
    auto msgs = store.messages(cid);
    QCOMPARE(msgs.size(), 2);
    QCOMPARE(msgs[1].content, QStringLiteral("second answer"));
    QCOMPARE(msgs[1].versionIndex, 1);
    QCOMPARE(msgs[1].versionCount, 2);
    {
        RawConnection raw(path);
        QString error;
        raw.exec(QStringLiteral("CREATE TRIGGER refuse BEFORE INSERT ON messages WHEN new.content = 'boom' "
                                "BEGIN SELECT RAISE(ABORT, 'refused'); END"), &error);
        QVERIFY2(error.isEmpty(), qPrintable(error));
    }
    StoredMessage failing = assistantMessage(cid, QStringLiteral("boom"));
    failing.position = 1;
    QVERIFY(!store.replaceMessagesFrom(failing));
    msgs = store.messages(cid);
    QCOMPARE(msgs.size(), 2);  // the delete was rolled back with the failed insert
    QCOMPARE(msgs[1].content, QStringLiteral("second answer"));
}

// Words that only another version of an answer holds are found, and the hit names that version
// (opening it shows it); the version shown is -1. Versions that go leave the index.
void TestChatStoreVersions::searchFindsEveryVersion() {
    ChatStore store;
    QVERIFY(store.open(QStringLiteral(":memory:")).ok);
    const qint64 cid = *store.createConversation({});
    const qint64 id = *store.appendMessage(assistantMessage(cid, QStringLiteral("llamas graze quietly")),
                                           {version(1, QStringLiteral("alpacas hum loudly"))});
    QList<SearchHit> hits = store.search(QStringLiteral("llamas"));
    QCOMPARE(hits.size(), 1);
    QCOMPARE(hits.first().messageId, id);
    QCOMPARE(hits.first().versionIndex, -1);
    hits = store.search(QStringLiteral("alpacas"));
    QCOMPARE(hits.size(), 1);
    QCOMPARE(hits.first().messageId, id);
    QCOMPARE(hits.first().conversationId, cid);
    QCOMPARE(hits.first().versionIndex, 1);
    QCOMPARE(hits.first().snippet, QStringLiteral("[alpacas] hum loudly"));
    // A word in both: the shown one and the other, each once.
    QVERIFY(store.setVersions(id, 0, {version(1, QStringLiteral("llamas hum loudly")), version(2, QStringLiteral("vicunas sing"))}));
    hits = store.search(QStringLiteral("llamas"));
    QCOMPARE(hits.size(), 2);
    QCOMPARE(QSet<int>({hits[0].versionIndex, hits[1].versionIndex}), QSet<int>({-1, 1}));
    QVERIFY(store.search(QStringLiteral("alpacas")).isEmpty());  // replaced: gone from the index
    QCOMPARE(store.search(QStringLiteral("vicunas")).first().versionIndex, 2);
    QVERIFY(store.deleteConversation(cid));
    QVERIFY(store.search(QStringLiteral("vicunas")).isEmpty());
    QVERIFY(store.search(QStringLiteral("llamas")).isEmpty());
}

// A file of schema 3 already holds other versions: the upgrade indexes them. (Made by taking a
// file this build writes back to schema 3 — its versions' index and triggers dropped — which is
// exactly the schema 3 layout: the migrated file is then compared with a fresh one.)
void TestChatStoreVersions::versionsStoredBeforeTheirIndexAreFound() {
    const QString path = file(QStringLiteral("v3-with-versions.db"));
    qint64 id = 0;
    {
        ChatStore store;
        QVERIFY(store.open(path).persistent);
        const qint64 cid = *store.createConversation({});
        id = *store.appendMessage(assistantMessage(cid, QStringLiteral("llamas graze quietly")),
                                  {version(1, QStringLiteral("alpacas hum loudly"))});
    }
    {
        RawConnection raw(path, QStringLiteral("back-to-3"));
        QString error;
        for (const char* sql : {"DROP TRIGGER message_versions_fts_insert", "DROP TRIGGER message_versions_fts_delete",
                                "DROP TRIGGER message_versions_fts_update", "DROP TABLE message_versions_fts", "PRAGMA user_version = 3"}) {
            raw.exec(QString::fromLatin1(sql), &error);
            QVERIFY2(error.isEmpty(), qPrintable(error));
        }
    }
    {
        ChatStore store;
        const ChatStore::OpenReport report = store.open(path);
        QVERIFY2(report.ok && report.persistent && report.message.isEmpty(), qPrintable(report.message));
        const QList<SearchHit> hits = store.search(QStringLiteral("alpacas"));
        QCOMPARE(hits.size(), 1);
        QCOMPARE(hits.first().messageId, id);
        QCOMPARE(hits.first().versionIndex, 1);
    }
    {
        RawConnection raw(path, QStringLiteral("after-4"));
        QCOMPARE(raw.exec(QStringLiteral("PRAGMA user_version")).toInt(), 4);
    }
    const QString fresh = file(QStringLiteral("fresh-4.db"));
    {
        ChatStore store;
        QVERIFY(store.open(fresh).persistent);
    }
    QCOMPARE(schemaOf(path, QStringLiteral("schema-4-migrated")), schemaOf(fresh, QStringLiteral("schema-4-fresh")));
}

void TestChatStoreVersions::closedStore() {
    ChatStore store;
    QVERIFY(store.versions(1).isEmpty());
    QVERIFY(store.lastError().contains(QStringLiteral("not open")));
    QVERIFY(!store.setVersions(1, 0, {}));
    QVERIFY(!store.appendMessage(assistantMessage(1, QStringLiteral("x")), {version(1, QStringLiteral("y"))}));
}

void TestChatStoreVersions::migratesARealVersion1File() {
    const QString path = copyOfVersion(1, dir_, QStringLiteral("v1.db"));
    QVERIFY(!path.isEmpty());
    {
        RawConnection raw(path, QStringLiteral("before"));
        QCOMPARE(raw.exec(QStringLiteral("PRAGMA user_version")).toInt(), 1);
    }
    qint64 regenerated = 0;
    {
        ChatStore store;
        const ChatStore::OpenReport report = store.open(path);
        QVERIFY2(report.ok && report.persistent && report.message.isEmpty(), qPrintable(report.message));
        // What the schema-1 code wrote (see tests/data/README.md) is all there, a single version each.
        const QList<StoredConversation> conversations = store.conversations();
        QCOMPARE(conversations.size(), 2);
        for (int c = 0; c < 2; ++c) {
            const StoredConversation& conversation = conversations[1 - c];  // most recent first
            QCOMPARE(conversation.title, QStringLiteral("Conversation %1").arg(c));
            QCOMPARE(conversation.modelName, QStringLiteral("stories260K"));
            const QList<StoredMessage> list = store.messages(conversation.id);
            QCOMPARE(list.size(), 4);
            for (int i = 0; i < 4; ++i) {
                const StoredMessage& m = list[i];
                QCOMPARE(m.position, i);
                QCOMPARE(m.versionIndex, 0);
                QCOMPARE(m.versionCount, 1);
                QVERIFY(store.versions(m.id).isEmpty());
                if (i % 2 == 0) {
                    QCOMPARE(m.content, QStringLiteral("question %1 of conversation %2").arg(i / 2).arg(c));
                    QCOMPARE(m.tokens, (QVector<qint32>{1, 518, 25580, 29962}));
                    continue;
                }
                const bool last = c == 1 && i == 3;
                QCOMPARE(m.content, last ? QStringLiteral("regenerated answer")
                                         : QStringLiteral("answer %1 of conversation %2").arg(i / 2).arg(c));
                const auto steps = decodeStepRecords({reinterpret_cast<const uint8_t*>(m.tokenRecords.constData()),
                                                      size_t(m.tokenRecords.size())});
                QVERIFY(steps);
                QCOMPARE(steps->size(), size_t(last ? 4 : 3));
                for (size_t k = 0; k < steps->size(); ++k) {
                    QCOMPARE((*steps)[k].sample.id, 300 + int(k));
                    QCOMPARE((*steps)[k].piece, " w" + std::to_string(k));
                    QCOMPARE((*steps)[k].sample.top.size(), size_t(5));
                }
                if (last) regenerated = m.id;
            }
        }
        QCOMPARE(regenerated, qint64(9));  // the regenerated answer kept its id (8 was deleted)
        QCOMPARE(store.search(QStringLiteral("question")).size(), 4);
        QVERIFY(store.setVersions(regenerated, 1, {version(0, QStringLiteral("the answer before"))}));
        const QList<SearchHit> before = store.search(QStringLiteral("before"));
        QCOMPARE(before.size(), 1);
        QCOMPARE(before.first().messageId, regenerated);
        QCOMPARE(before.first().versionIndex, 0);
    }
    RawConnection raw(path, QStringLiteral("after"));
    QCOMPARE(raw.exec(QStringLiteral("PRAGMA user_version")).toInt(), 4);  // through 2, 3 (answers' origin) to 4 (versions searched)
    QCOMPARE(raw.exec(QStringLiteral("SELECT content FROM message_versions WHERE message_id = 9")).toString(),
             QStringLiteral("the answer before"));
    // The migrated file has exactly the schema of a file this version creates.
    const QString fresh = file(QStringLiteral("fresh.db"));
    {
        ChatStore store;
        QVERIFY(store.open(fresh).persistent);
    }
    QCOMPARE(schemaOf(path, QStringLiteral("schema-migrated")), schemaOf(fresh, QStringLiteral("schema-fresh")));
}

void TestChatStoreVersions::failedVersion2MigrationRollsBack() {
    // Schema 1 with an index already named like version 2's: its table is created, then its
    // index fails, and the whole step must roll back (still version 1, no message_versions).
    const QString path = copyOfVersion(1, dir_, QStringLiteral("v1-clash.db"));
    QVERIFY(!path.isEmpty());
    {
        RawConnection raw(path, QStringLiteral("clash"));
        QString error;
        raw.exec(QStringLiteral("CREATE INDEX message_versions_by_message ON conversations (title)"), &error);
        QVERIFY2(error.isEmpty(), qPrintable(error));
    }
    const QByteArray before = readAll(path);
    {
        ChatStore store;
        const ChatStore::OpenReport report = store.open(path);
        QVERIFY(report.ok && !report.persistent);
        QVERIFY2(report.message.contains(QStringLiteral("upgrading it to schema version 2")) &&
                     report.message.contains(QStringLiteral("left untouched")),
                 qPrintable(report.message));
    }
    QCOMPARE(readAll(path), before);
    RawConnection raw(path, QStringLiteral("after-clash"));
    QCOMPARE(raw.exec(QStringLiteral("PRAGMA user_version")).toInt(), 1);
    QCOMPARE(raw.exec(QStringLiteral("SELECT count(*) FROM sqlite_schema WHERE name = 'message_versions'")).toInt(), 0);
    QCOMPARE(raw.exec(QStringLiteral("SELECT count(*) FROM messages")).toInt(), 8);
}

// tests/data/chat_store_v2.db, written by the schema-2 app (see tests/data/README.md): a local
// stories260K answer and one from `inferscope-cli serve`. Migrated to schema 3, both read back
// whole, with the origin their stats name (no file, no vocabulary hash: not kept then) and their
// picks' texts; a new answer's origin — its model file, vocabulary hash, KV cache, every
// candidate's bytes — round-trips through the migrated file, and the export carries it.
void TestChatStoreVersions::migratesARealVersion2File() {
    const QString path = copyOfVersion(2, dir_, QStringLiteral("v2.db"));
    QVERIFY(!path.isEmpty());
    {
        RawConnection raw(path, QStringLiteral("before-v2"));
        QCOMPARE(raw.exec(QStringLiteral("PRAGMA user_version")).toInt(), 2);
    }
    ChatStore store;
    const ChatStore::OpenReport report = store.open(path);
    QVERIFY2(report.ok && report.persistent && report.message.isEmpty(), qPrintable(report.message));
    const QList<StoredConversation> conversations = store.conversations();
    QCOMPARE(conversations.size(), 2);
    const StoredConversation& remote = conversations[0];  // most recent first
    const StoredConversation& local = conversations[1];
    QCOMPARE(local.modelName, QStringLiteral("/work/shared/models/stories260K.gguf"));
    QCOMPARE(remote.modelName, QStringLiteral("http://127.0.0.1:18437#stories260K"));

    const QList<StoredMessage> localMessages = store.messages(local.id);
    QCOMPARE(localMessages.size(), 2);
    QCOMPARE(localMessages[1].content, QStringLiteral(", there was a little girl named Lily. She"));
    QCOMPARE(localMessages[1].origin, QJsonObject());
    const ChatMessage localAnswer = ConversationMapper::fromStored(localMessages[1], {}, false);
    QCOMPARE(localAnswer.steps.size(), size_t(12));
    QCOMPARE(localAnswer.origin.backend, AnswerBackend::Local);
    QCOMPARE(localAnswer.origin.modelName, std::string("stories260K"));
    QCOMPARE(localAnswer.origin.device, std::string("CPU avx512_core_bf16, 2 threads"));
    QCOMPARE(localAnswer.origin.vocabularyHash, uint64_t(0));  // not known then
    QCOMPARE(localAnswer.origin.timedBy(), std::string_view("engine"));
    // The picks' texts came with the steps; the candidates' never were stored.
    std::string joined;
    for (const StepRecord& s : localAnswer.steps) {
        QVERIFY(localAnswer.origin.text(s.sample.id));
        QCOMPARE(localAnswer.origin.text(s.sample.id)->bytes, s.piece);
        joined += s.piece;
    }
    QCOMPARE(QString::fromStdString(joined), QStringLiteral(", there was a little girl named Lily. She"));

    const QList<StoredMessage> remoteMessages = store.messages(remote.id);
    QCOMPARE(remoteMessages.size(), 2);
    const ChatMessage remoteAnswer = ConversationMapper::fromStored(remoteMessages[1], {}, false);
    QCOMPARE(remoteAnswer.steps.size(), size_t(8));
    QCOMPARE(remoteAnswer.origin.backend, AnswerBackend::Remote);
    QCOMPARE(remoteAnswer.origin.serverUrl, std::string("http://127.0.0.1:18437"));
    QCOMPARE(remoteAnswer.origin.modelName, std::string("stories260K"));
    QCOMPARE(remoteAnswer.origin.timedBy(), std::string_view("client"));

    // A new answer in the migrated file keeps its whole origin.
    StoredMessage fresh = assistantMessage(local.id, QStringLiteral("a new answer"), 3, 4);
    fresh.position = 2;
    AnswerOrigin origin;
    origin.backend = AnswerBackend::Local;
    origin.modelFile = "/models/qwen2-tiny.gguf";
    origin.modelName = "qwen2-tiny";
    origin.vocabularyHash = 0x0123456789abcdefULL;
    origin.vocabularySize = 151936;
    origin.device = "CPU avx2, 2 threads";
    origin.kvType = "q8_0";
    origin.kvBytesPerToken = 1088;
    origin.kvBytesReserved = 1088 * 512;
    origin.contextLength = 512;
    origin.tokens = {{300, {" w0", {}}}, {301, {"\xF0\x9F", {}}}, {2, {{}, "<|im_end|>"}}};
    origin.structured = {StructuredKind::JsonSchema, R"({"type": "object"})"};  // what it was asked to be
    fresh.origin = originToJson(origin);
    QVERIFY(store.appendMessage(fresh));
    const QList<StoredMessage> after = store.messages(local.id);
    QCOMPARE(after.size(), 3);
    QCOMPARE(originFromJson(after[2].origin), origin);
    QCOMPARE(ConversationMapper::fromStored(after[2], {}, false).origin, origin);
    const QString exported = dir_.filePath(QStringLiteral("v2-export.json"));
    QVERIFY(store.exportConversation(local.id, exported, QStringLiteral("json")));
    const QJsonArray messages = QJsonDocument::fromJson(readAll(exported)).object()["messages"].toArray();
    QCOMPARE(messages.size(), 3);
    QVERIFY(!messages[1].toObject().contains("origin"));  // not known: not made up
    QCOMPARE(messages[2].toObject()["origin"].toObject()["model_file"].toString(), QStringLiteral("/models/qwen2-tiny.gguf"));
    QCOMPARE(messages[2].toObject()["origin"].toObject()["vocabulary_hash"].toString(), QStringLiteral("0123456789abcdef"));
    QCOMPARE(messages[2].toObject()["origin"].toObject()["timed_by"].toString(), QStringLiteral("engine"));
}

QTEST_GUILESS_MAIN(TestChatStoreVersions)
#include "tst_chat_store_versions.moc"
