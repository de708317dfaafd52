// ChatStore: round trips of every field, ordering, truncation, cascades, migrations (search is in
// tst_chat_store_search.cpp, damage and locks in tst_chat_store_recovery.cpp).
#include <QJsonArray>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTest>

#include "tst_chat_store_helpers.h"

using namespace inferscope;
using namespace inferscope::testing;

class TestChatStore : public QObject {
    Q_OBJECT
private slots:
    void openMemory();
    void openFileIsVersionedAndWal();
    void conversationRoundTrip();
    void messageRoundTrip();
    void reopenKeepsEverything();
    void listOrder();
    void truncateConversation();
    void deleteCascades();
    void failedWritesChangeNothing();
    void migratesVersion0();
    void refusesNewerVersionUntouched();
    void failedMigrationRollsBack();

private:
    QTemporaryDir dir_;
    QString file(const QString& name) const { return dir_.filePath(name); }
};

void TestChatStore::openMemory() {
    ChatStore store;
    QSignalSpy opened(&store, &ChatStore::opened);
    const ChatStore::OpenReport report = store.open(QStringLiteral(":memory:"));
    QVERIFY(report.ok);
    QVERIFY(!report.persistent);
    QVERIFY2(report.message.isEmpty(), qPrintable(report.message));
    QVERIFY(store.isOpen());
    QVERIFY(!store.isPersistent());
    QCOMPARE(opened.count(), 1);
    QVERIFY(store.conversations().isEmpty());
}

void TestChatStore::openFileIsVersionedAndWal() {
    const QString path = file(QStringLiteral("wal/chats.db"));  // the folder is created
    ChatStore store;
    const ChatStore::OpenReport report = store.open(path);
    QVERIFY2(report.ok && report.persistent && report.message.isEmpty(), qPrintable(report.message));
    QVERIFY(store.isPersistent());
    QCOMPARE(store.path(), path);
    RawConnection raw(path);
    QVERIFY(raw.opened());
    QCOMPARE(raw.exec(QStringLiteral("PRAGMA user_version")).toInt(), ChatStore::schemaVersion());
    QCOMPARE(ChatStore::schemaVersion(), 4);  // 3: answers keep their origin; 4: their other versions are searched
    QCOMPARE(raw.exec(QStringLiteral("PRAGMA journal_mode")).toString(), QStringLiteral("wal"));
    QCOMPARE(raw.exec(QStringLiteral("SELECT count(*) FROM sqlite_schema WHERE name = 'messages_fts'")).toInt(), 1);
}

void TestChatStore::conversationRoundTrip() {
    ChatStore store;
    QVERIFY(store.open(QStringLiteral(":memory:")).ok);
    StoredConversation c;
    c.title = QStringLiteral("Ünïcode title 🦙");
    c.createdAt = QDateTime(QDate(2026, 11, 5), QTime(12, 34, 56, 789), Qt::UTC);
    c.updatedAt = QDateTime(QDate(2026, 11, 5), QTime(13, 0, 0, 1), Qt::UTC);
    c.modelName = QStringLiteral("TinyLlama-1.1B-Chat");
    c.systemPrompt = QStringLiteral("You are terse.\nSecond line.");
    c.mode = QStringLiteral("completion");
    c.templateName = QStringLiteral("zephyr");
    QSignalSpy changed(&store, &ChatStore::conversationsChanged);
    const std::optional<qint64> id = store.createConversation(c);
    QVERIFY2(id, qPrintable(store.lastError()));
    QCOMPARE(changed.count(), 1);
    const std::optional<StoredConversation> back = store.conversation(*id);
    QVERIFY(back);
    QCOMPARE(back->id, *id);
    QCOMPARE(back->title, c.title);
    QCOMPARE(back->createdAt, c.createdAt);
    QCOMPARE(back->createdAt.timeSpec(), Qt::UTC);
    QCOMPARE(back->createdAt.time().msec(), 789);
    QCOMPARE(back->updatedAt, c.updatedAt);
    QCOMPARE(back->modelName, c.modelName);
    QCOMPARE(back->systemPrompt, c.systemPrompt);
    QCOMPARE(back->mode, c.mode);
    QCOMPARE(back->templateName, c.templateName);
    QCOMPARE(back->messageCount, 0);
    QVERIFY(!store.conversation(*id + 100));

    // Defaults: no times means now; empty strings stay empty (not NULL).
    const QDateTime before = QDateTime::currentDateTimeUtc().addMSecs(-1);
    const std::optional<qint64> plain = store.createConversation({});
    QVERIFY2(plain, qPrintable(store.lastError()));
    const StoredConversation p = *store.conversation(*plain);
    QVERIFY(p.createdAt >= before && p.createdAt <= QDateTime::currentDateTimeUtc());
    QCOMPARE(p.updatedAt, p.createdAt);
    QCOMPARE(p.mode, QStringLiteral("chat"));
    QVERIFY(p.title.isEmpty());

    c.id = *id;
    c.title = QStringLiteral("Changed");
    c.mode = QStringLiteral("chat");
    QVERIFY(store.updateConversation(c));
    const StoredConversation u = *store.conversation(*id);
    QCOMPARE(u.title, QStringLiteral("Changed"));
    QCOMPARE(u.mode, QStringLiteral("chat"));
    QCOMPARE(u.createdAt, c.createdAt);
    QVERIFY(u.updatedAt > c.updatedAt);  // touched
    c.id = 9999;
    QVERIFY(!store.updateConversation(c));
    QVERIFY(store.lastError().contains(QStringLiteral("no such conversation")));
}

void TestChatStore::messageRoundTrip() {
    ChatStore store;
    QVERIFY(store.open(QStringLiteral(":memory:")).ok);
    const qint64 cid = *store.createConversation({});
    StoredMessage m = assistantMessage(cid, QStringLiteral("Line one\nline two — ünïcode 🦙\u0000end"), 4, 7);
    m.tokens = {0, -1, 2147483647, -2147483647 - 1, 32000};
    m.createdAt = QDateTime(QDate(2026, 1, 2), QTime(3, 4, 5, 6), Qt::UTC);
    m.finishReason = QStringLiteral("context_full");
    m.stats = QJsonObject{{QStringLiteral("ttft_ms"), 120.25},
                          {QStringLiteral("sampler"), QJsonObject{{QStringLiteral("temperature"), 0.8},
                                                                   {QStringLiteral("top_k"), 40}}},
                          {QStringLiteral("model"), QStringLiteral("stories260K")},
                          {QStringLiteral("stop"), QJsonArray({QStringLiteral("\n\n"), QStringLiteral("User:")})}};
    m.position = 42;  // not used: appends take the next position
    const std::optional<qint64> first = store.appendMessage(userMessage(cid, QStringLiteral("hi")));
    QVERIFY2(first, qPrintable(store.lastError()));
    const std::optional<qint64> id = store.appendMessage(m);
    QVERIFY2(id, qPrintable(store.lastError()));
    const QList<StoredMessage> list = store.messages(cid);
    QCOMPARE(list.size(), 2);
    QCOMPARE(list[0].id, *first);
    QCOMPARE(list[0].position, 0);
    QCOMPARE(list[0].role, QStringLiteral("user"));
    QCOMPARE(list[0].tokens, (QVector<qint32>{1, 518, 25580, 29962}));
    QVERIFY(list[0].tokenRecords.isEmpty());
    QVERIFY(list[0].stats.isEmpty());
    const StoredMessage& b = list[1];
    QCOMPARE(b.id, *id);
    QCOMPARE(b.conversationId, cid);
    QCOMPARE(b.position, 1);
    QCOMPARE(b.role, m.role);
    QCOMPARE(b.content, m.content);
    QCOMPARE(b.createdAt, m.createdAt);
    QCOMPARE(b.finishReason, m.finishReason);
    QCOMPARE(b.stats, m.stats);
    QCOMPARE(b.tokens, m.tokens);
    QCOMPARE(b.tokenRecords, m.tokenRecords);
    const auto decoded = decodeStepRecords({reinterpret_cast<const uint8_t*>(b.tokenRecords.constData()),
                                            size_t(b.tokenRecords.size())});
    QVERIFY(decoded);
    QCOMPARE(decoded->size(), size_t(4));
    QCOMPARE((*decoded)[3].sample.top.size(), size_t(7));
    QCOMPARE(store.conversation(cid)->messageCount, 2);
}

void TestChatStore::reopenKeepsEverything() {
    const QString path = file(QStringLiteral("reopen.db"));
    QList<StoredMessage> before;
    qint64 cid = 0;
    {
        ChatStore store;
        QVERIFY(store.open(path).persistent);
        cid = *store.createConversation({});
        QVERIFY(store.renameConversation(cid, QStringLiteral("kept")));
        store.appendMessage(userMessage(cid, QStringLiteral("persist me")));
        store.appendMessage(assistantMessage(cid, QStringLiteral("persisted"), 20, 10));
        before = store.messages(cid);
    }
    ChatStore again;
    const ChatStore::OpenReport report = again.open(path);
    QVERIFY2(report.ok && report.persistent && report.message.isEmpty(), qPrintable(report.message));
    QCOMPARE(again.conversation(cid)->title, QStringLiteral("kept"));
    const QList<StoredMessage> after = again.messages(cid);
    QCOMPARE(after.size(), before.size());
    for (qsizetype i = 0; i < after.size(); ++i) {
        QCOMPARE(after[i].content, before[i].content);
        QCOMPARE(after[i].tokens, before[i].tokens);
        QCOMPARE(after[i].tokenRecords, before[i].tokenRecords);
        QCOMPARE(after[i].stats, before[i].stats);
        QCOMPARE(after[i].createdAt, before[i].createdAt);
    }
    QCOMPARE(again.search(QStringLiteral("persist")).size(), 2);
}

void TestChatStore::listOrder() {
    ChatStore store;
    QVERIFY(store.open(QStringLiteral(":memory:")).ok);
    const auto make = [&](const QString& title, int year) {
        StoredConversation c;
        c.title = title;
        c.createdAt = QDateTime(QDate(year, 1, 1), QTime(0, 0), Qt::UTC);
        return *store.createConversation(c);
    };
    const qint64 older = make(QStringLiteral("older"), 2020);
    const qint64 newer = make(QStringLiteral("newer"), 2022);
    const qint64 middle = make(QStringLiteral("middle"), 2021);
    const auto titles = [&] {
        QStringList t;
        for (const StoredConversation& c : store.conversations()) t << c.title;
        return t;
    };
    QCOMPARE(titles(), (QStringList{"newer", "middle", "older"}));
    QVERIFY(store.renameConversation(older, QStringLiteral("renamed")));  // does not reorder
    QCOMPARE(titles(), (QStringList{"newer", "middle", "renamed"}));
    QVERIFY(store.appendMessage(userMessage(older, QStringLiteral("bump"))));  // touches updatedAt
    QCOMPARE(titles(), (QStringList{"renamed", "newer", "middle"}));
    QCOMPARE(store.conversations().first().messageCount, 1);
    QVERIFY(store.truncateConversation(middle, 0));  // touches too
    QCOMPARE(titles().first(), QStringLiteral("middle"));
    Q_UNUSED(newer);
}

void TestChatStore::truncateConversation() {
    ChatStore store;
    QVERIFY(store.open(QStringLiteral(":memory:")).ok);
    const qint64 cid = *store.createConversation({});
    const qint64 other = *store.createConversation({});
    for (int i = 0; i < 5; ++i) store.appendMessage(userMessage(cid, QStringLiteral("m%1").arg(i)));
    store.appendMessage(userMessage(other, QStringLiteral("other")));
    QSignalSpy changed(&store, &ChatStore::conversationsChanged);
    QVERIFY(store.truncateConversation(cid, 2));
    QCOMPARE(changed.count(), 1);
    QList<StoredMessage> list = store.messages(cid);
    QCOMPARE(list.size(), 2);
    QCOMPARE(list[1].content, QStringLiteral("m1"));
    QCOMPARE(store.appendMessage(userMessage(cid, QStringLiteral("again"))).has_value(), true);
    list = store.messages(cid);
    QCOMPARE(list.size(), 3);
    QCOMPARE(list[2].position, 2);
    QCOMPARE(list[2].content, QStringLiteral("again"));
    QCOMPARE(store.messages(other).size(), 1);  // untouched
    QVERIFY(store.truncateConversation(cid, 10));  // nothing past the end: fine
    QCOMPARE(store.messages(cid).size(), 3);
    QVERIFY(store.truncateConversation(cid, 0));
    QVERIFY(store.messages(cid).isEmpty());
    QVERIFY(!store.truncateConversation(12345, 0));
}

void TestChatStore::deleteCascades() {
    const QString path = file(QStringLiteral("cascade.db"));
    ChatStore store;
    QVERIFY(store.open(path).persistent);
    const QList<qint64> ids = populate(store, 2, 2);
    QCOMPARE(ids.size(), 2);
    QSignalSpy changed(&store, &ChatStore::conversationsChanged);
    QVERIFY(store.deleteConversation(ids[0]));
    QCOMPARE(changed.count(), 1);
    QVERIFY(!store.conversation(ids[0]));
    QVERIFY(store.messages(ids[0]).isEmpty());
    QCOMPARE(store.messages(ids[1]).size(), 4);
    RawConnection raw(path);
    QCOMPARE(raw.exec(QStringLiteral("SELECT count(*) FROM messages WHERE conversation_id = %1").arg(ids[0])).toInt(), 0);
    QCOMPARE(raw.exec(QStringLiteral("SELECT count(*) FROM messages")).toInt(), 4);
    QVERIFY(!store.deleteConversation(ids[0]));  // already gone
}

void TestChatStore::failedWritesChangeNothing() {
    ChatStore store;
    QVERIFY(store.open(QStringLiteral(":memory:")).ok);
    const qint64 cid = *store.createConversation({});
    const QDateTime touched = store.conversation(cid)->updatedAt;
    QVERIFY(!store.appendMessage(userMessage(cid + 1, QStringLiteral("nowhere"))));
    QVERIFY(store.lastError().contains(QStringLiteral("no conversation")));
    StoredMessage bad = userMessage(cid, QStringLiteral("bad role"));
    bad.role = QStringLiteral("tool");
    QTRY_VERIFY(QDateTime::currentDateTimeUtc() > touched);  // the clock has moved on: a later updatedAt would show
    QVERIFY(!store.appendMessage(bad));  // CHECK constraint; the whole transaction rolls back
    QVERIFY2(store.lastError().contains(QStringLiteral("CHECK")), qPrintable(store.lastError()));
    QCOMPARE(store.conversation(cid)->updatedAt, touched);
    QVERIFY(store.messages(cid).isEmpty());

    ChatStore closed;
    QVERIFY(!closed.createConversation({}));
    QVERIFY(!closed.lastError().isEmpty());
    QVERIFY(closed.conversations().isEmpty());
}

void TestChatStore::migratesVersion0() {
    // An empty file, and a database of someone else's at version 0 (its table stays).
    const QString empty = file(QStringLiteral("v0-empty.db"));
    QVERIFY(writeAll(empty, {}));
    const QString other = file(QStringLiteral("v0-other.db"));
    {
        RawConnection raw(other);
        raw.exec(QStringLiteral("CREATE TABLE notes (text TEXT)"));
        raw.exec(QStringLiteral("INSERT INTO notes VALUES ('keep me')"));
    }
    for (const QString& path : {empty, other}) {
        ChatStore store;
        const ChatStore::OpenReport report = store.open(path);
        QVERIFY2(report.ok && report.persistent && report.message.isEmpty(), qPrintable(report.message));
        QVERIFY(store.appendMessage(userMessage(*store.createConversation({}), QStringLiteral("works"))));
    }
    RawConnection raw(other);
    QCOMPARE(raw.exec(QStringLiteral("PRAGMA user_version")).toInt(), ChatStore::schemaVersion());
    QCOMPARE(raw.exec(QStringLiteral("SELECT text FROM notes")).toString(), QStringLiteral("keep me"));
    RawConnection rawEmpty(empty, QStringLiteral("raw-empty"));
    QCOMPARE(rawEmpty.exec(QStringLiteral("PRAGMA user_version")).toInt(), ChatStore::schemaVersion());
}

void TestChatStore::refusesNewerVersionUntouched() {
    const QString path = file(QStringLiteral("future.db"));
    {
        RawConnection raw(path);
        raw.exec(QStringLiteral("CREATE TABLE conversations (id INTEGER PRIMARY KEY, shiny TEXT)"));
        raw.exec(QStringLiteral("PRAGMA user_version = 7"));
    }
    const QByteArray before = readAll(path);
    QVERIFY(!before.isEmpty());
    ChatStore store;
    const ChatStore::OpenReport report = store.open(path);
    QVERIFY(report.ok);
    QVERIFY(!report.persistent);
    QVERIFY2(report.message.contains(QStringLiteral("newer version")) && report.message.contains(QStringLiteral("7")) &&
                 report.message.contains(QStringLiteral("kept in memory")),
             qPrintable(report.message));
    QCOMPARE(store.openMessage(), report.message);
    QVERIFY(store.appendMessage(userMessage(*store.createConversation({}), QStringLiteral("in memory"))));
    store.close();
    QCOMPARE(readAll(path), before);
    QVERIFY(!QFile::exists(path + QStringLiteral("-wal")));
}

void TestChatStore::failedMigrationRollsBack() {
    // A version-0 file whose "messages" table is not ours: migration 1 fails part-way and must
    // leave nothing behind (no half-made schema, still version 0).
    const QString path = file(QStringLiteral("clash.db"));
    {
        RawConnection raw(path);
        raw.exec(QStringLiteral("CREATE TABLE messages (x)"));
    }
    ChatStore store;
    const ChatStore::OpenReport report = store.open(path);
    QVERIFY(report.ok && !report.persistent);
    QVERIFY2(report.message.contains(QStringLiteral("upgrading it to schema version 1")) &&
                 report.message.contains(QStringLiteral("left untouched")),
             qPrintable(report.message));
    store.close();
    RawConnection raw(path);
    QCOMPARE(raw.exec(QStringLiteral("PRAGMA user_version")).toInt(), 0);
    QCOMPARE(raw.exec(QStringLiteral("SELECT count(*) FROM sqlite_schema WHERE name = 'conversations'")).toInt(), 0);
}

QTEST_GUILESS_MAIN(TestChatStore)
#include "tst_chat_store.moc"
