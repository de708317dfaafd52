// ChatStore search: FTS5 hits with [ ] snippets ranked by bm25, user text that cannot inject FTS
// syntax, and removed messages leaving the index.
#include <QTest>

#include "tst_chat_store_helpers.h"

using namespace inferscope;
using namespace inferscope::testing;

class TestChatStoreSearch : public QObject {
    Q_OBJECT
private slots:
    void search();
    void searchRanksAndLimits();
    void ftsQueryQuotesEveryTerm();
    void searchIsInjectionProof_data();
    void searchIsInjectionProof();
    void removedMessagesLeaveSearch();
};

void TestChatStoreSearch::search() {
    ChatStore store;
    QVERIFY(store.open(QStringLiteral(":memory:")).ok);
    StoredConversation c;
    c.title = QStringLiteral("Foxes");
    const qint64 a = *store.createConversation(c);
    const qint64 b = *store.createConversation({});
    const qint64 m1 = *store.appendMessage(userMessage(a, QStringLiteral("Tell me about the quick brown fox")));
    store.appendMessage(assistantMessage(a, QStringLiteral("Foxes are small omnivores. They live almost everywhere.")));
    const qint64 m3 = *store.appendMessage(userMessage(b, QStringLiteral("Un café crème, s'il vous plaît")));

    QList<SearchHit> hits = store.search(QStringLiteral("quick"));
    QCOMPARE(hits.size(), 1);
    QCOMPARE(hits[0].conversationId, a);
    QCOMPARE(hits[0].messageId, m1);
    QCOMPARE(hits[0].conversationTitle, QStringLiteral("Foxes"));
    QCOMPARE(hits[0].snippet, QStringLiteral("Tell me about the [quick] brown fox"));

    hits = store.search(QStringLiteral("FOX"));  // case-insensitive, prefix: fox, Foxes
    QCOMPARE(hits.size(), 2);
    hits = store.search(QStringLiteral("cafe CRÈME"));  // diacritics folded, terms ANDed
    QCOMPARE(hits.size(), 1);
    QCOMPARE(hits[0].messageId, m3);
    QCOMPARE(hits[0].snippet, QStringLiteral("Un [café] [crème], s'il vous plaît"));
    QVERIFY(store.search(QStringLiteral("fox café")).isEmpty());
    QVERIFY(store.search(QStringLiteral("zebra")).isEmpty());
    QVERIFY(store.lastError().isEmpty());
}

void TestChatStoreSearch::searchRanksAndLimits() {
    ChatStore store;
    QVERIFY(store.open(QStringLiteral(":memory:")).ok);
    const qint64 cid = *store.createConversation({});
    const qint64 once = *store.appendMessage(userMessage(cid, QStringLiteral("a llama in a long sentence about many other things entirely")));
    const qint64 thrice = *store.appendMessage(userMessage(cid, QStringLiteral("llama llama llama")));
    const qint64 twice = *store.appendMessage(userMessage(cid, QStringLiteral("llama and llama")));
    QList<SearchHit> hits = store.search(QStringLiteral("llama"));
    QCOMPARE(hits.size(), 3);
    QCOMPARE(hits[0].messageId, thrice);
    QCOMPARE(hits[1].messageId, twice);
    QCOMPARE(hits[2].messageId, once);
    hits = store.search(QStringLiteral("llama"), 2);
    QCOMPARE(hits.size(), 2);
    QVERIFY(store.search(QStringLiteral("llama"), 0).isEmpty());

    // Long text: the snippet is a window around the match, with ellipses.
    QString longText;
    for (int i = 0; i < 100; ++i) longText += QStringLiteral("word%1 ").arg(i);
    longText += QStringLiteral("needle");
    for (int i = 0; i < 100; ++i) longText += QStringLiteral(" after%1").arg(i);
    store.appendMessage(userMessage(cid, longText));
    hits = store.search(QStringLiteral("needle"));
    QCOMPARE(hits.size(), 1);
    QVERIFY2(hits[0].snippet.startsWith(QStringLiteral("…")) && hits[0].snippet.endsWith(QStringLiteral("…")),
             qPrintable(hits[0].snippet));
    QVERIFY(hits[0].snippet.contains(QStringLiteral("[needle]")));
    QVERIFY(hits[0].snippet.size() < 150);
}

void TestChatStoreSearch::ftsQueryQuotesEveryTerm() {
    QCOMPARE(ChatStore::toFtsQuery(QStringLiteral("quick fox")), QStringLiteral("\"quick\"* \"fox\"*"));
    QCOMPARE(ChatStore::toFtsQuery(QStringLiteral("  say \"hi\"  ")), QStringLiteral("\"say\"* \"\"\"hi\"\"\"*"));
    QCOMPARE(ChatStore::toFtsQuery(QStringLiteral("NEAR(a b) -c")), QStringLiteral("\"NEAR(a\"* \"b)\"* \"-c\"*"));
    QCOMPARE(ChatStore::toFtsQuery(QStringLiteral("* - \" ()")), QString());
    QCOMPARE(ChatStore::toFtsQuery(QString()), QString());
}

void TestChatStoreSearch::searchIsInjectionProof_data() {
    QTest::addColumn<QString>("query");
    QTest::addColumn<int>("hits");  // expected count over the three messages below
    QTest::newRow("lone quote") << "\"" << 0;
    QTest::newRow("unbalanced quote") << "\"brown fox" << 1;
    QTest::newRow("quote inside") << "bro\"wn" << 0;
    QTest::newRow("doubled quotes") << "\"\"" << 0;
    QTest::newRow("star") << "*" << 0;
    QTest::newRow("leading star") << "*fox" << 2;
    QTest::newRow("trailing star") << "fox*" << 2;
    QTest::newRow("NEAR group") << "NEAR(fox dog)" << 0;  // the phrase "near fox*" AND dog*
    QTest::newRow("NEAR word") << "fox NEAR dog" << 0;    // fox* AND near* AND dog*
    QTest::newRow("near fox") << "near fox" << 1;
    QTest::newRow("minus") << "-fox" << 2;
    QTest::newRow("minus alone") << "-" << 0;
    QTest::newRow("OR") << "fox OR" << 0;
    QTest::newRow("AND alone") << "AND" << 1;
    QTest::newRow("NOT") << "NOT fox" << 0;
    QTest::newRow("parenthesis") << "(fox" << 2;
    QTest::newRow("column filter") << "content:fox" << 0;
    QTest::newRow("column set") << "{content}: fox" << 0;  // the word content* AND fox*
    QTest::newRow("caret") << "^fox" << 2;
    QTest::newRow("plus") << "+" << 0;
    QTest::newRow("apostrophe") << "'fox'" << 2;
    QTest::newRow("sql") << "'; DROP TABLE messages; --" << 0;
    QTest::newRow("backslash") << "\\" << 0;
    QTest::newRow("empty") << "" << 0;
    QTest::newRow("spaces") << "   \t\n" << 0;
    QTest::newRow("emoji") << "🦙" << 0;
    QTest::newRow("nul") << QString(QChar(0)) + "fox" << 2;
}

void TestChatStoreSearch::searchIsInjectionProof() {
    QFETCH(QString, query);
    QFETCH(int, hits);
    ChatStore store;
    QVERIFY(store.open(QStringLiteral(":memory:")).ok);
    const qint64 cid = *store.createConversation({});
    store.appendMessage(userMessage(cid, QStringLiteral("the quick brown fox jumps over the lazy dog")));
    store.appendMessage(userMessage(cid, QStringLiteral("a fox and a hare and a near miss")));
    store.appendMessage(userMessage(cid, QStringLiteral("nothing to see here")));
    const QList<SearchHit> result = store.search(query);
    QVERIFY2(store.lastError().isEmpty(), qPrintable(store.lastError()));
    QCOMPARE(result.size(), hits);
    QCOMPARE(store.messages(cid).size(), 3);
}

void TestChatStoreSearch::removedMessagesLeaveSearch() {
    ChatStore store;
    QVERIFY(store.open(QStringLiteral(":memory:")).ok);
    const qint64 a = *store.createConversation({});
    const qint64 b = *store.createConversation({});
    store.appendMessage(userMessage(a, QStringLiteral("kiwi one")));
    store.appendMessage(userMessage(a, QStringLiteral("kiwi two")));
    store.appendMessage(userMessage(b, QStringLiteral("kiwi three")));
    QCOMPARE(store.search(QStringLiteral("kiwi")).size(), 3);
    QVERIFY(store.truncateConversation(a, 1));
    QCOMPARE(store.search(QStringLiteral("kiwi")).size(), 2);
    QVERIFY(store.search(QStringLiteral("two")).isEmpty());
    QVERIFY(store.deleteConversation(b));
    const QList<SearchHit> left = store.search(QStringLiteral("kiwi"));
    QCOMPARE(left.size(), 1);
    QCOMPARE(left[0].conversationId, a);
    QVERIFY(store.search(QStringLiteral("three")).isEmpty());
}

QTEST_GUILESS_MAIN(TestChatStoreSearch)
#include "tst_chat_store_search.moc"
