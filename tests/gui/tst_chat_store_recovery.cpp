// ChatStore against damaged, locked and unwritable databases: moved aside and recovered, or a
// memory database for the session with a message — never a crash, never silently empty.
//
// Run as "tst_chat_store_recovery --hold-lock FILE" it is the other program: it locks FILE
// exclusively, prints "locked" and waits for a line on stdin.
#include <QDir>
#include <QProcess>
#include <QRandomGenerator>
#include <QSignalSpy>
#include <QSqlDatabase>
#include <QSqlQuery>
#include <QTemporaryDir>
#include <QTest>
#include <iostream>
#include <unistd.h>

#include "tst_chat_store_helpers.h"

namespace {
// SQLite's busy timeout (ms) on the store's own connection (one store open at a time), -1 when none.
int storeBusyTimeout() {
    for (const QString& name : QSqlDatabase::connectionNames()) {
        if (!name.startsWith(QLatin1String("inferscope-chat-store-")) || name.endsWith(QLatin1String("-source"))) continue;
        QSqlQuery q(QSqlDatabase::database(name, false));
        return q.exec(QStringLiteral("PRAGMA busy_timeout")) && q.next() ? q.value(0).toInt() : -1;
    }
    return -1;
}
}  // namespace

using namespace inferscope;
using namespace inferscope::testing;

namespace {

struct Original {
    QList<StoredConversation> conversations;
    QHash<qint64, QList<StoredMessage>> messages;
    int messageCount = 0;
};

// A store of nConversations × nPairs exchanges with large token records (overflow pages), closed.
Original makeDatabase(const QString& path, int nConversations, int nPairs) {
    Original original;
    ChatStore store;
    if (!store.open(path).persistent) return original;
    for (const qint64 id : populate(store, nConversations, nPairs, 40, 10)) {
        original.messages.insert(id, store.messages(id));
        original.messageCount += int(original.messages[id].size());
    }
    original.conversations = store.conversations();
    return original;
}

int pageSize(const QString& path) {
    RawConnection raw(path, QStringLiteral("page-size"));
    return raw.exec(QStringLiteral("PRAGMA page_size")).toInt();
}

int rootPage(const QString& path, const QString& name) {
    RawConnection raw(path, QStringLiteral("root-page"));
    return raw.exec(QStringLiteral("SELECT rootpage FROM sqlite_schema WHERE name = '%1'").arg(name)).toInt();
}

// Overwrites 1-based pages with seeded random bytes.
bool overwritePages(const QString& path, const QList<int>& pages, quint32 seed) {
    const int size = pageSize(path);
    QFile file(path);
    if (size <= 0 || !file.open(QIODevice::ReadWrite)) return false;
    QRandomGenerator random(seed);
    for (const int page : pages) {
        QByteArray garbage(size, Qt::Uninitialized);
        random.fillRange(reinterpret_cast<quint32*>(garbage.data()), size / 4);
        if (!file.seek(qint64(page - 1) * size) || file.write(garbage) != size) return false;
    }
    return true;
}

struct Measured {
    int conversations = 0;
    int messages = 0;
    int exact = 0;             // messages equal to their original in every field
    int withoutRecords = 0;    // equal except for token records that were dropped
    int titlesKept = 0;
};

// Compares the recovered store with the original: nothing recovered may be garbage.
// Every answer of a store of nConversations × nPairs exchanges gets two other versions (the shown
// one is version k % 3 of the k-th answer) with nSteps step records each.
QHash<qint64, QList<StoredVersion>> makeVersionedDatabase(const QString& path, int nConversations, int nPairs,
                                                          int nSteps, Original* original) {
    QHash<qint64, QList<StoredVersion>> versions;  // message id -> its other versions
    ChatStore store;
    if (!store.open(path).persistent) return versions;
    int k = 0;
    for (int c = 0; c < nConversations; ++c) {
        const qint64 id = *store.createConversation({});
        for (int p = 0; p < nPairs; ++p, ++k) {
            store.appendMessage(userMessage(id, QStringLiteral("question %1 of conversation %2").arg(p).arg(c)));
            StoredMessage answer = assistantMessage(id, QStringLiteral("answer %1 shown").arg(k), nSteps, 10);
            answer.versionIndex = k % 3;
            QList<StoredVersion> others;
            for (int i = 0; i < 3; ++i) {
                if (i == answer.versionIndex) continue;
                const StoredMessage v = assistantMessage(id, QStringLiteral("answer %1 version %2").arg(k).arg(i), nSteps, 10);
                others.append({i, v.content, QStringLiteral("length"), v.stats, v.tokens, v.tokenRecords});
            }
            if (const std::optional<qint64> mid = store.appendMessage(answer, others)) versions.insert(*mid, others);
        }
        original->messages.insert(id, store.messages(id));
        original->messageCount += int(original->messages[id].size());
    }
    original->conversations = store.conversations();
    return versions;
}

struct MeasuredVersions {
    int versions = 0;        // other versions in the recovered store
    int exact = 0;           // equal to an original version of their answer (index aside)
    int withoutRecords = 0;  // equal except for token records that were dropped
    int consistent = 0;      // answers whose numbering is whole: count = others + 1, shown among 0..count-1
};

MeasuredVersions measureVersions(ChatStore& store, const QHash<qint64, QList<StoredVersion>>& original) {
    MeasuredVersions m;
    for (const StoredConversation& c : store.conversations()) {
        for (const StoredMessage& message : store.messages(c.id)) {
            const QList<StoredVersion> recovered = store.versions(message.id);
            QList<int> indexes{message.versionIndex};
            for (const StoredVersion& v : recovered) {
                ++m.versions;
                indexes.append(v.index);
                const QList<StoredVersion> before = original.value(message.id);
                const auto same = std::find_if(before.begin(), before.end(), [&](const StoredVersion& o) {
                    return o.content == v.content && o.finishReason == v.finishReason && o.stats == v.stats;
                });
                if (same == before.end()) continue;
                if (same->tokenRecords == v.tokenRecords && same->tokens == v.tokens) ++m.exact;
                else if (v.tokenRecords.isEmpty()) ++m.withoutRecords;
            }
            std::sort(indexes.begin(), indexes.end());
            bool whole = message.versionCount == indexes.size();
            for (int i = 0; i < indexes.size(); ++i) whole = whole && indexes[i] == i;
            m.consistent += whole ? 1 : 0;
        }
    }
    return m;
}

Measured measure(ChatStore& store, const Original& original) {
    Measured m;
    for (const StoredConversation& c : store.conversations()) {
        ++m.conversations;
        const auto it = std::find_if(original.conversations.begin(), original.conversations.end(),
                                     [&](const StoredConversation& o) { return o.id == c.id; });
        if (it != original.conversations.end() && it->title == c.title) ++m.titlesKept;
        const QList<StoredMessage> before = original.messages.value(c.id);
        for (const StoredMessage& r : store.messages(c.id)) {
            ++m.messages;
            const auto same = std::find_if(before.begin(), before.end(), [&](const StoredMessage& o) { return o.id == r.id; });
            if (same == before.end() || same->content != r.content || same->role != r.role ||
                same->tokens != r.tokens || same->stats != r.stats || same->createdAt != r.createdAt)
                continue;
            if (same->tokenRecords == r.tokenRecords) ++m.exact;
            else if (r.tokenRecords.isEmpty()) ++m.withoutRecords;
        }
    }
    return m;
}

int holdLock(const QString& path) {
    RawConnection raw(path, QStringLiteral("holder"));
    QString error;
    raw.exec(QStringLiteral("PRAGMA locking_mode = EXCLUSIVE"), &error);
    raw.exec(QStringLiteral("BEGIN EXCLUSIVE"), &error);
    raw.exec(QStringLiteral("CREATE TABLE held (x)"), &error);  // takes the lock; rolled back below
    if (!error.isEmpty()) {
        std::cout << "error " << error.toStdString() << std::endl;
        return 1;
    }
    std::cout << "locked" << std::endl;
    std::string line;
    std::getline(std::cin, line);
    raw.exec(QStringLiteral("ROLLBACK"));
    return 0;
}

}  // namespace

class TestChatStoreRecovery : public QObject {
    Q_OBJECT
private slots:
    void garbageFileIsMovedAside();
    void damagedPagesAreRecovered_data();
    void damagedPagesAreRecovered();
    void deletedRowsStayDeleted_data();
    void deletedRowsStayDeleted();
    void versionsAreRecovered_data();
    void versionsAreRecovered();
    void lostVersionsAreReported_data();
    void lostVersionsAreReported();
    void lockedForWritingCopiesForReading();
    void lockedCompletelyIsReported();
    void lockedByAnotherProcess();
    void unwritableFolder();

private:
    QTemporaryDir dir_;
    QString file(const QString& name) const { return dir_.filePath(name); }
};

void TestChatStoreRecovery::garbageFileIsMovedAside() {
    const QString path = file(QStringLiteral("garbage.db"));
    QByteArray garbage(64 * 1024, Qt::Uninitialized);
    QRandomGenerator(7).fillRange(reinterpret_cast<quint32*>(garbage.data()), garbage.size() / 4);
    QVERIFY(writeAll(path, garbage));
    ChatStore store;
    const ChatStore::OpenReport report = store.open(path);
    QVERIFY(report.ok);
    QVERIFY(report.persistent);
    QVERIFY(report.movedTo.startsWith(path + QStringLiteral(".corrupt-")));
    QCOMPARE(readAll(report.movedTo), garbage);  // kept as it was
    QVERIFY2(report.message.contains(QStringLiteral("file is not a database")) &&
                 report.message.contains(QStringLiteral("moved to ") + report.movedTo) &&
                 report.message.contains(QStringLiteral("recovered 0 of 0 conversations (0 messages)")),
             qPrintable(report.message));
    QVERIFY(store.appendMessage(userMessage(*store.createConversation({}), QStringLiteral("fresh start"))));
    store.close();
    ChatStore again;  // the new file is a good database now
    const ChatStore::OpenReport second = again.open(path);
    QVERIFY2(second.message.isEmpty() && second.persistent, qPrintable(second.message));
    QCOMPARE(again.conversations().size(), 1);
}

void TestChatStoreRecovery::damagedPagesAreRecovered_data() {
    // What was measured when this test was written (12 conversations, 96 messages, 210 pages of
    // 4 KiB, random bytes with seed 42); a change to the schema or the recovery shows here.
    // Schema 2 added two pages (212), so the seeded tenth hits other pages: 13 messages are lost
    // there, by schema-1 recovery code on the same damaged file too.
    QTest::addColumn<QString>("damage");
    QTest::addColumn<int>("minConversations");
    QTest::addColumn<int>("minMessages");
    QTest::addColumn<int>("minExact");   // messages with their token records
    QTest::addColumn<int>("minTitles");
    // Schema 4 added the other versions' full-text index (258 pages now): the three scattered
    // pages moved with it and two of them now fall on messages' pages (2 lost, as the same
    // recovery code loses them from the same damaged file).
    QTest::newRow("three scattered pages") << "scattered" << 12 << 94 << 92 << 12;
    QTest::newRow("conversations table page") << "conversations" << 12 << 96 << 96 << 0;
    QTest::newRow("messages table root page") << "messages" << 12 << 0 << 0 << 12;
    QTest::newRow("schema page") << "schema" << 12 << 96 << 96 << 12;
    QTest::newRow("ten percent of pages") << "tenth" << 12 << 83 << 68 << 12;
    // The rest was never listed. 55 since ISR3 records (a seventh stage, the grammar's figures): the
    // same messages fill more pages, so fewer lie in the first 60% (65 with ISR2).
    QTest::newRow("truncated to 60%") << "truncated" << 12 << 55 << 55 << 12;
}

void TestChatStoreRecovery::damagedPagesAreRecovered() {
    QFETCH(QString, damage);
    QFETCH(int, minConversations);
    QFETCH(int, minMessages);
    QFETCH(int, minExact);
    QFETCH(int, minTitles);
    const QString path = file(QStringLiteral("damaged-%1.db").arg(damage));
    const Original original = makeDatabase(path, 12, 4);
    QCOMPARE(original.conversations.size(), 12);
    QCOMPARE(original.messageCount, 96);
    QVERIFY(!QFile::exists(path + QStringLiteral("-wal")));  // checkpointed on close
    const int pages = int(QFileInfo(path).size() / pageSize(path));
    QList<int> hit;
    if (damage == QLatin1String("scattered")) {
        hit = {pages / 4, pages / 2, 3 * pages / 4};
    } else if (damage == QLatin1String("schema")) {
        hit = {1};
    } else if (damage == QLatin1String("tenth")) {
        QRandomGenerator random(1234);
        while (hit.size() < pages / 10)
            if (const int page = random.bounded(2, pages + 1); !hit.contains(page)) hit.append(page);
    } else if (damage == QLatin1String("truncated")) {
        QVERIFY(QFile::resize(path, qint64(pages * 6 / 10) * pageSize(path)));
    } else {
        hit = {rootPage(path, damage)};
    }
    if (!hit.isEmpty()) QVERIFY(overwritePages(path, hit, 42));

    ChatStore store;
    const ChatStore::OpenReport report = store.open(path);
    QVERIFY(report.ok);
    QVERIFY(report.persistent);
    QVERIFY(QFile::exists(report.movedTo));
    const Measured m = measure(store, original);
    qInfo("%s: pages %s of %d overwritten -> recovered %d of %d conversations (%d titles), %d of %d messages "
          "(%d exact, %d without token records); report: %s",
          qPrintable(damage), qPrintable([&] { QStringList s; for (int p : hit) s << QString::number(p); return s.join(','); }()),
          pages, m.conversations, report.conversationsFound, m.titlesKept, m.messages, original.messageCount, m.exact,
          m.withoutRecords, qPrintable(report.message));
    // The report tells the truth about what the new store holds...
    QCOMPARE(report.conversationsRecovered, m.conversations);
    QCOMPARE(report.messagesRecovered, m.messages);
    QVERIFY(report.message.contains(QStringLiteral("recovered %1 of %2 conversations (%3 messages)")
                                        .arg(m.conversations).arg(report.conversationsFound).arg(m.messages)));
    // ...every recovered message is its original (token records at worst dropped, never garbage)...
    QCOMPARE(m.exact + m.withoutRecords, m.messages);
    // ...and at least what was measured when this test was written is recovered.
    QVERIFY(m.conversations >= minConversations);
    QVERIFY(m.messages >= minMessages);
    QVERIFY(m.exact >= minExact);
    QVERIFY(m.titlesKept >= minTitles);
    if (m.titlesKept < m.conversations)
        QVERIFY(report.message.contains(QStringLiteral("%1 conversations lost their titles").arg(m.conversations - m.titlesKept)));
    // The recovered store is a working one: search finds recovered text, writes work.
    if (m.messages > 0) QVERIFY(!store.search(QStringLiteral("answer")).isEmpty() || !store.search(QStringLiteral("question")).isEmpty());
    QVERIFY(store.appendMessage(userMessage(*store.createConversation({}), QStringLiteral("after recovery"))));
}

void TestChatStoreRecovery::deletedRowsStayDeleted_data() {
    QTest::addColumn<QString>("damage");
    QTest::newRow("schema page (no way to tell live rows)") << "schema";
    QTest::newRow("messages root page (live ids from the index)") << "messages";
}

// Recovery reads raw pages; what the user deleted or regenerated away must not come back.
void TestChatStoreRecovery::deletedRowsStayDeleted() {
    QFETCH(QString, damage);
    const QString path = file(QStringLiteral("deleted-%1.db").arg(damage));
    QHash<qint64, QList<StoredMessage>> live;
    {
        ChatStore store;
        QVERIFY(store.open(path).persistent);
        const QList<qint64> ids = populate(store, 12, 4, 40, 10);
        for (int i = 0; i < 4; ++i) QVERIFY(store.deleteConversation(ids[i]));
        QVERIFY(store.truncateConversation(ids[4], 2));
        QVERIFY(store.truncateConversation(ids[5], 7));  // regenerate the last answer:
        QVERIFY(store.appendMessage(assistantMessage(ids[5], QStringLiteral("regenerated answer"), 40, 10)));
        for (const StoredConversation& c : store.conversations()) live.insert(c.id, store.messages(c.id));
    }
    QCOMPARE(live.size(), 8);
    QVERIFY(overwritePages(path, {damage == QLatin1String("schema") ? 1 : rootPage(path, damage)}, 42));
    ChatStore store;
    const ChatStore::OpenReport report = store.open(path);
    QVERIFY2(report.persistent && !report.movedTo.isEmpty(), qPrintable(report.message));
    const QList<StoredConversation> recovered = store.conversations();
    QCOMPARE(recovered.size(), 8);
    for (const StoredConversation& c : recovered) {
        QVERIFY(live.contains(c.id));
        QCOMPARE(store.messages(c.id), live[c.id]);  // truncated and regenerated-away messages stay gone
    }
    // Nor does the search index hold more than the live questions.
    int questions = 0;
    for (const QList<StoredMessage>& list : live)
        for (const StoredMessage& m : list) questions += m.content.startsWith(QStringLiteral("question")) ? 1 : 0;
    QCOMPARE(store.search(QStringLiteral("question"), 1000).size(), questions);
}

void TestChatStoreRecovery::versionsAreRecovered_data() {
    // 6 conversations × 2 answers, each with 2 other versions of 40 steps (overflow pages, and
    // a versions table deep enough for an interior root page); then one answer's versions are
    // rewritten and another answer removed (22 versions live). What was measured when written.
    QTest::addColumn<QString>("damage");
    QTest::addColumn<int>("minExact");
    QTest::newRow("schema page (rows by shape)") << "schema" << 22;
    QTest::newRow("versions table root page (leaves read directly)") << "message_versions" << 22;
    QTest::newRow("versions index root page") << "message_versions_by_message" << 22;
    QTest::newRow("messages table root page") << "messages" << 22;
}

void TestChatStoreRecovery::versionsAreRecovered() {
    QFETCH(QString, damage);
    QFETCH(int, minExact);
    const QString path = file(QStringLiteral("versions-%1.db").arg(damage));
    Original original;
    QHash<qint64, QList<StoredVersion>> versions = makeVersionedDatabase(path, 6, 2, 40, &original);
    QCOMPARE(versions.size(), 12);
    {
        // Versions replaced and versions of a removed answer must not come back from the pages.
        ChatStore store;
        QVERIFY(store.open(path).persistent);
        const qint64 conversation = original.conversations.first().id;
        const QList<StoredMessage> list = store.messages(conversation);
        QList<StoredVersion> replaced = versions[list[1].id];
        for (StoredVersion& v : replaced) v.content += QStringLiteral(" (rewritten)");
        QVERIFY(store.setVersions(list[1].id, list[1].versionIndex, replaced));
        versions[list[1].id] = replaced;
        QVERIFY(store.truncateConversation(conversation, 2));
        versions.remove(list[3].id);
        original.messages[conversation] = store.messages(conversation);
        original.messageCount -= 2;
    }
    QVERIFY(overwritePages(path, {damage == QLatin1String("schema") ? 1 : rootPage(path, damage)}, 42));
    ChatStore store;
    const ChatStore::OpenReport report = store.open(path);
    QVERIFY2(report.persistent && !report.movedTo.isEmpty(), qPrintable(report.message));
    const Measured messages = measure(store, original);
    const MeasuredVersions m = measureVersions(store, versions);
    qInfo("%s: %d of %d messages (%d exact), %d of 22 versions (%d exact, %d without records), %d consistent; report: %s",
          qPrintable(damage), messages.messages, original.messageCount, messages.exact, m.versions, m.exact,
          m.withoutRecords, m.consistent, qPrintable(report.message));
    QCOMPARE(messages.exact, 22);
    QCOMPARE(report.versionsRecovered, m.versions);
    QCOMPARE(m.exact + m.withoutRecords, m.versions);  // never garbage
    QCOMPARE(m.consistent, messages.messages);         // every answer's numbering is whole
    QVERIFY(m.exact >= minExact);
    // Where nothing was lost, the shown version keeps its number and the others theirs.
    for (const StoredConversation& c : store.conversations())
        for (const StoredMessage& message : store.messages(c.id))
            if (versions.contains(message.id) && store.versions(message.id).size() == 2)
                QCOMPARE(store.versions(message.id), versions[message.id]);
}

void TestChatStoreRecovery::lostVersionsAreReported_data() {
    // Small versions (one leaf page holds the table): damage loses them for good.
    QTest::addColumn<QStringList>("pages");
    QTest::addColumn<QString>("says");
    QTest::newRow("table lost, index lists them")
        << QStringList{"message_versions"} << "24 of the answers' 24 other versions could not be read.";
    QTest::newRow("table and index lost")
        << QStringList{"message_versions", "message_versions_by_message"}
        << "The table of the answers' other versions was damaged: 0 versions were recovered, others may be lost.";
}

void TestChatStoreRecovery::lostVersionsAreReported() {
    QFETCH(QStringList, pages);
    QFETCH(QString, says);
    const QString path = file(QStringLiteral("lost-versions-%1.db").arg(pages.size()));
    Original original;
    const QHash<qint64, QList<StoredVersion>> versions = makeVersionedDatabase(path, 6, 2, 0, &original);
    QCOMPARE(versions.size(), 12);
    QList<int> hit;
    for (const QString& name : pages) hit.append(rootPage(path, name));
    QVERIFY(overwritePages(path, hit, 42));
    ChatStore store;
    const ChatStore::OpenReport report = store.open(path);
    QVERIFY2(report.persistent && report.message.contains(says), qPrintable(report.message));
    QCOMPARE(report.versionsRecovered, 0);
    QCOMPARE(measure(store, original).exact, 24);  // the answers themselves are whole
    for (const StoredConversation& c : store.conversations())
        for (const StoredMessage& message : store.messages(c.id)) {
            QCOMPARE(message.versionCount, 1);
            QCOMPARE(message.versionIndex, 0);
        }
}

void TestChatStoreRecovery::lockedForWritingCopiesForReading() {
    const QString path = file(QStringLiteral("locked-write.db"));
    const Original original = makeDatabase(path, 2, 2);
    {
        RawConnection holder(path, QStringLiteral("holder"));
        QString error;
        holder.exec(QStringLiteral("BEGIN EXCLUSIVE"), &error);  // in WAL: writers wait, readers read
        holder.exec(QStringLiteral("CREATE TABLE held (x)"), &error);
        QVERIFY2(error.isEmpty(), qPrintable(error));
        ChatStore store;
        store.setBusyTimeout(200);
        const ChatStore::OpenReport report = store.open(path);
        QVERIFY(report.ok);
        QVERIFY(!report.persistent);
        QVERIFY(!store.isPersistent());
        QVERIFY2(report.message.contains(QStringLiteral("locked by another program: ") + path) &&
                     report.message.contains(QStringLiteral("copied in for reading: 2 of 2 conversations (8 messages)")) &&
                     report.message.contains(QStringLiteral("kept in memory and will not be saved")),
                 qPrintable(report.message));
        QCOMPARE(store.conversations().size(), 2);
        QCOMPARE(store.messages(original.conversations[0].id), original.messages[original.conversations[0].id]);
        QVERIFY(store.appendMessage(userMessage(original.conversations[0].id, QStringLiteral("not saved"))));
        holder.exec(QStringLiteral("ROLLBACK"));
    }
    ChatStore after;
    const ChatStore::OpenReport report = after.open(path);
    QVERIFY2(report.persistent && report.message.isEmpty(), qPrintable(report.message));
    QCOMPARE(after.messages(original.conversations[0].id).size(), 4);  // the memory session left it alone
}

void TestChatStoreRecovery::lockedCompletelyIsReported() {
    const QString path = file(QStringLiteral("locked-all.db"));
    makeDatabase(path, 2, 1);
    RawConnection holder(path, QStringLiteral("holder"));
    QString error;
    holder.exec(QStringLiteral("PRAGMA locking_mode = EXCLUSIVE"), &error);
    holder.exec(QStringLiteral("BEGIN EXCLUSIVE"), &error);
    holder.exec(QStringLiteral("CREATE TABLE held (x)"), &error);
    QVERIFY2(error.isEmpty(), qPrintable(error));
    ChatStore store;
    store.setBusyTimeout(200);
    const ChatStore::OpenReport report = store.open(path);
    // The wait for the lock is the one set (SQLite's busy timeout on the store's connection), not a default.
    QCOMPARE(storeBusyTimeout(), 200);
    QVERIFY(report.ok);
    QVERIFY(!report.persistent);
    QVERIFY(report.movedTo.isEmpty());  // locked is not damaged
    QVERIFY2(report.message.contains(QStringLiteral("locked by another program: ") + path + QStringLiteral(" (database is locked)")) &&
                 report.message.contains(QStringLiteral("kept in memory and will not be saved")),
             qPrintable(report.message));
    QVERIFY(store.conversations().isEmpty());
    QVERIFY(store.createConversation({}));  // the session goes on
    holder.exec(QStringLiteral("ROLLBACK"));
}

void TestChatStoreRecovery::lockedByAnotherProcess() {
    const QString path = file(QStringLiteral("locked-process.db"));
    makeDatabase(path, 1, 1);
    QProcess other;
    other.start(QCoreApplication::applicationFilePath(), {QStringLiteral("--hold-lock"), path});
    QVERIFY(other.waitForStarted());
    QVERIFY(other.waitForReadyRead(10000));
    QCOMPARE(other.readLine().trimmed(), QByteArray("locked"));
    {
        ChatStore store;
        store.setBusyTimeout(200);
        const ChatStore::OpenReport report = store.open(path);
        QVERIFY(report.ok && !report.persistent);
        QVERIFY2(report.message.contains(QStringLiteral("locked by another program: ") + path), qPrintable(report.message));
    }
    other.write("\n");
    other.closeWriteChannel();
    QVERIFY(other.waitForFinished(10000));
    QCOMPARE(other.exitCode(), 0);
    ChatStore store;  // released: opens normally, nothing lost
    const ChatStore::OpenReport report = store.open(path);
    QVERIFY2(report.persistent && report.message.isEmpty(), qPrintable(report.message));
    QCOMPARE(store.conversations().size(), 1);
}

void TestChatStoreRecovery::unwritableFolder() {
    // A folder that cannot be created: its parent is a file (this works as root too).
    const QString blocker = file(QStringLiteral("not-a-folder"));
    QVERIFY(writeAll(blocker, "x"));
    ChatStore store;
    QSignalSpy opened(&store, &ChatStore::opened);
    const ChatStore::OpenReport report = store.open(blocker + QStringLiteral("/sub/chats.db"));
    QVERIFY(report.ok && !report.persistent);
    QCOMPARE(opened.count(), 1);
    QVERIFY2(report.message.contains(QStringLiteral("cannot be created")) &&
                 report.message.contains(QStringLiteral("kept in memory and will not be saved")),
             qPrintable(report.message));
    QVERIFY(store.createConversation({}));

    if (::geteuid() == 0) QSKIP("running as root: permissions do not stop writes");
    const QString folder = file(QStringLiteral("read-only"));
    QVERIFY(QDir().mkpath(folder));
    QFile::setPermissions(folder, QFileDevice::ReadOwner | QFileDevice::ExeOwner);
    ChatStore readOnly;
    const ChatStore::OpenReport denied = readOnly.open(folder + QStringLiteral("/chats.db"));
    QFile::setPermissions(folder, QFileDevice::ReadOwner | QFileDevice::WriteOwner | QFileDevice::ExeOwner);
    QVERIFY(denied.ok && !denied.persistent);
    QVERIFY2(denied.message.contains(QStringLiteral("is not writable")), qPrintable(denied.message));
}

int main(int argc, char** argv) {
    QCoreApplication app(argc, argv);
    if (argc == 3 && QByteArray(argv[1]) == "--hold-lock") return holdLock(QString::fromLocal8Bit(argv[2]));
    TestChatStoreRecovery test;
    return QTest::qExec(&test, argc, argv);
}

#include "tst_chat_store_recovery.moc"
