// ServerSlots (gui/remote/server_slots.h), the KV cache panel's view of a server's slots:
// - against a real `inferscope-cli serve --parallel 2 --ctx 512` on 127.0.0.1, connected through
//   the app's controllers: the exact figures before and after a chat the app ran itself, each as
//   QML reads it; no request while the view is not active;
// - the KV cache panel's card on a report: the texts and bars it shows, no QML warning;
// - against a server in the test: a 404 is "does not report slots", said once, not asked again;
//   llama.cpp's list is another format; hostile bodies (too big, wrong types, 1,000 slots, totals
//   that do not add up, not JSON) are refused with the reason and nothing shown; an error body is
//   never repeated; a redirect to another port is not followed (the key stays home); a server
//   that says nothing meets the deadline.
// Every wait is for a condition (a reply, a status), bounded.
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QQmlComponent>
#include <QQmlEngine>
#include <QQuickItem>
#include <QSignalSpy>
#include <QTcpServer>
#include <QTcpSocket>
#include <QtTest>
#include <functional>
#include <memory>

#include "chat_fixture.h"
#include "remote/server_slots.h"
#include "serve_process.h"

#include "app/qml_modules.h"  // Q_IMPORT_QML_PLUGIN of each module

using namespace inferscope;
using namespace inferscope::testing_gui;
using inferscope::testing_serve::ServeProcess;

namespace {

const std::string kModel = INFERSCOPE_RESOURCES_DIR "/models/stories260K.gguf";
const QString kKey = QStringLiteral("sk-slots-0123456789abcdef");
constexpr int kMaxTokens = 24;
constexpr int kShare = 256;                // --ctx 512 between 2 slots
constexpr int64_t kKvBytesPerToken = 1280;  // stories260K, F32 cache: 2 (K, V) × 5 layers × 4 KV heads × 8 dims × 4 B

QString connectTo(AppGraph& f, const QString& url, const QString& key) {
    QSignalSpy failed(f.engine.get(), &EngineController::loadFailed);
    f.engine->connectToServer(url, key, QStringLiteral("stories260K"));
    if (!QTest::qWaitFor([&] { return f.engine->state() != EngineController::State::Loading; }, 30000)) return QStringLiteral("timed out");
    return failed.isEmpty() ? QString() : failed.first().first().toString();
}

// Waits for the view's next reply (read, refused or failed) after `start`.
bool nextReply(ServerSlots& view, const std::function<void()>& start = {}) {
    QSignalSpy replied(&view, &ServerSlots::replied);
    if (start) start();
    return QTest::qWaitFor([&] { return !replied.isEmpty(); }, 20000);
}

// A server in the test: each request on its own connection, answered by `respond` once its head
// has arrived (heads over 64 KiB are not read); every head kept.
class FakeServer : public QObject {
public:
    std::function<void(QTcpSocket*)> respond;
    QList<QByteArray> heads;
    FakeServer() {
        server_.listen(QHostAddress::LocalHost, 0);
        connect(&server_, &QTcpServer::newConnection, this, [this] {
            QTcpSocket* s = server_.nextPendingConnection();
            connect(s, &QTcpSocket::disconnected, s, &QObject::deleteLater);
            auto buffer = std::make_shared<QByteArray>();
            connect(s, &QTcpSocket::readyRead, s, [this, s, buffer] {
                if (buffer->contains("\r\n\r\n")) return void(s->readAll());
                buffer->append(s->readAll().left(65536));
                const qsizetype end = buffer->indexOf("\r\n\r\n");
                if (end < 0) return;
                heads.append(buffer->left(end));
                respond(s);
            });
        });
    }
    // Answers every request with `reply` as given, then closes.
    void answer(const QByteArray& reply) {
        respond = [reply](QTcpSocket* s) {
            s->write(reply);
            s->disconnectFromHost();
        };
    }
    quint16 port() const { return server_.serverPort(); }
    QString url() const { return QStringLiteral("http://127.0.0.1:%1").arg(port()); }

private:
    QTcpServer server_;
};

QByteArray http(const QByteArray& status, const QByteArray& body) {
    return "HTTP/1.1 " + status + "\r\nContent-Type: application/json\r\nContent-Length: " + QByteArray::number(body.size()) +
           "\r\nConnection: close\r\n\r\n" + body;
}

RemoteServer serverAt(const FakeServer& s) { return {RemoteSession::normalizeBase(s.url()), kKey, QStringLiteral("m"), QString()}; }

// A report as serve writes it: `n` idle slots of kShare positions, slot 0 holding `tokens`.
QJsonObject reportOf(int n, int tokens) {
    QJsonArray entries;
    for (int i = 0; i < n; ++i) {
        const int held = i == 0 ? tokens : 0;
        entries.append(QJsonObject{{"id", i}, {"state", "idle"}, {"kv_tokens", held}, {"kv_capacity", kShare},
                                 {"kv_bytes_used", double(held * kKvBytesPerToken)}, {"kv_bytes_reserved", double(kShare * kKvBytesPerToken)},
                                 {"requests", i == 0 ? 1 : 0}});
    }
    return {{"slots", entries}, {"kv_budget_tokens", kShare * n}, {"kv_bytes_used", double(tokens * kKvBytesPerToken)},
            {"kv_bytes_reserved", double(n * kShare * kKvBytesPerToken)}, {"queue", 0}, {"decoding", 0},
            {"last_batch", 1}, {"largest_batch", 1}, {"decode_tokens_per_second", 0.0}};
}
QByteArray json(const QJsonObject& o) { return QJsonDocument(o).toJson(QJsonDocument::Compact); }

// The report with one slot field replaced.
QByteArray withSlotField(const char* key, const QJsonValue& value) {
    QJsonObject r = reportOf(2, 10);
    QJsonArray entries = r["slots"].toArray();
    QJsonObject first = entries[0].toObject();
    first[QLatin1String(key)] = value;
    entries[0] = first;
    r["slots"] = entries;
    return json(r);
}

// An item by objectName among the QObject children and the visual children (a Repeater's
// delegates are the latter).
QObject* findItem(QObject* root, const QString& name) {
    if (root->objectName() == name) return root;
    for (QObject* c : root->children())
        if (QObject* found = findItem(c, name)) return found;
    if (auto* item = qobject_cast<QQuickItem*>(root))
        for (QQuickItem* c : item->childItems())
            if (QObject* found = findItem(c, name)) return found;
    return nullptr;
}

}  // namespace

class TestServerSlots : public QObject {
    Q_OBJECT

private slots:
    void initTestCase() { useTestLocations(); }

    void aRealServersSlotsAfterAChat() {
        ServeProcess server({"--model", kModel, "--parallel", "2", "--ctx", "512", "--api-key", kKey.toStdString()});
        QVERIFY2(server.port() > 0 && server.waitReady(kKey.toStdString()), "inferscope-cli serve did not start");
        ChatFixture f(kMaxTokens);
        ServerSlots view;
        view.setEngine(f.engine.get());
        view.setActive(true);
        QCOMPARE(view.phase(), ServerSlots::Phase::Off);  // no server: nothing asked
        QVERIFY(!view.polling());

        QCOMPARE(connectTo(f, QStringLiteral("http://127.0.0.1:%1").arg(server.port()), kKey), QString());
        QTRY_COMPARE_WITH_TIMEOUT(view.phase(), ServerSlots::Phase::Live, 20000);
        QVERIFY(view.polling());  // the next one is due
        QCOMPARE(view.report().perSlot.size(), size_t(2));
        for (const SlotFigures& s : view.report().perSlot) {
            QCOMPARE(s.kvTokens, int64_t(0));
            QCOMPARE(s.kvCapacity, int64_t(kShare));
            QCOMPARE(s.kvBytesReserved, kShare * kKvBytesPerToken);
        }

        QVERIFY(f.answer(QStringLiteral("Tell me a story about a cat.")));
        const ChatMessage& answer = f.last();
        QCOMPARE(answer.finishReason, Message::MaxTokens);
        QVERIFY(answer.stats.promptTokens > 0);
        // The slot holds the prompt and the answer but its last token (never run through the model).
        const int held = answer.stats.promptTokens + kMaxTokens - 1;
        // Waited for: a report asked while the answer streamed may still arrive after it ended.
        const auto describe = [&] {
            QStringList now;
            for (const SlotFigures& s : view.report().perSlot)
                now << QString::number(s.kvTokens) + (s.generating ? QStringLiteral(" (generating)") : QString());
            return QStringLiteral("expected %1 tokens in one slot; they hold %2").arg(held).arg(now.join(QStringLiteral(", ")));
        };
        QTRY_VERIFY2_WITH_TIMEOUT(view.report().bytesUsed == held * kKvBytesPerToken && view.generatingSlots() == 0,
                                  qPrintable(describe()), 20000);

        // As QML reads them.
        QCOMPARE(view.property("phase").value<ServerSlots::Phase>(), ServerSlots::Phase::Live);
        QVERIFY(view.property("status").toString().startsWith(QStringLiteral("Live from http://127.0.0.1:%1").arg(server.port())));
        const QVariantList list = view.property("slotList").toList();
        QCOMPARE(list.size(), 2);
        const int used = list[0].toMap()["kvTokens"].toInt() > 0 ? 0 : 1;  // the slot the request took
        const QVariantMap busy = list[used].toMap(), other = list[1 - used].toMap();
        QCOMPARE(busy["id"].toInt(), used);
        QCOMPARE(busy["state"].toString(), QStringLiteral("idle"));
        QCOMPARE(busy["generating"].toBool(), false);
        QCOMPARE(busy["kvTokens"].toDouble(), double(held));
        QCOMPARE(busy["kvCapacity"].toDouble(), double(kShare));
        QCOMPARE(busy["kvBytesUsed"].toDouble(), double(held * kKvBytesPerToken));
        QCOMPARE(busy["kvBytesReserved"].toDouble(), double(kShare * kKvBytesPerToken));  // 327,680
        QCOMPARE(busy["requests"].toDouble(), 1.0);
        QCOMPARE(other["id"].toInt(), 1 - used);
        QCOMPARE(other["kvTokens"].toDouble(), 0.0);
        QCOMPARE(other["kvBytesUsed"].toDouble(), 0.0);
        QCOMPARE(other["kvBytesReserved"].toDouble(), double(kShare * kKvBytesPerToken));
        QCOMPARE(other["requests"].toDouble(), 0.0);
        QCOMPARE(view.property("budgetTokens").toDouble(), 512.0);
        QCOMPARE(view.property("bytesUsed").toDouble(), double(held * kKvBytesPerToken));
        QCOMPARE(view.property("bytesReserved").toDouble(), 512.0 * kKvBytesPerToken);  // 655,360
        QCOMPARE(view.property("queue").toInt(), 0);
        QCOMPARE(view.property("decoding").toInt(), 0);
        QCOMPARE(view.property("generatingSlots").toInt(), 0);
        QCOMPARE(view.property("lastBatch").toInt(), 1);  // alone: batches of one
        QCOMPARE(view.property("largestBatch").toInt(), 1);
        QVERIFY(view.property("decodeTokensPerSecond").toDouble() >= 0);
        QCOMPARE(view.property("prefixCopies").toDouble(), 0.0);  // one chat: no other slot held its start
        QCOMPARE(view.property("prefixTokensCopied").toDouble(), 0.0);

        // Not on screen: nothing under way and nothing due; back on screen: asked at once.
        view.setActive(false);
        QVERIFY(!view.polling());
        QVERIFY(nextReply(view, [&] { view.setActive(true); }));
        QCOMPARE(view.phase(), ServerSlots::Phase::Live);
        // A file loaded instead: no server, nothing asked.
        f.engine->loadModel(QString::fromStdString(kModel));
        QTRY_COMPARE_WITH_TIMEOUT(view.phase(), ServerSlots::Phase::Off, 30000);
        QVERIFY(!view.polling());
        QVERIFY(view.slotList().isEmpty());
    }

    void theCardShowsTheReport() {
        ChatFixture f(8);  // the app's QML singletons (Theme reads AppSettings)
        QJsonObject r = reportOf(2, 10);
        QJsonArray list = r["slots"].toArray();
        QJsonObject first = list[0].toObject();
        first["state"] = "generating";
        list[0] = first;
        r["slots"] = list;
        r["queue"] = 3;
        r["decoding"] = 1;
        r["largest_batch"] = 2;
        r["decode_tokens_per_second"] = 85.3;
        r["prefix_copies"] = 3;
        r["prefix_tokens_copied"] = 1536;
        FakeServer server;
        server.answer(http("200 OK", json(r)));
        ServerSlots view;
        view.setServer(serverAt(server));
        QVERIFY(nextReply(view, [&] { view.setActive(true); }));
        QCOMPARE(view.phase(), ServerSlots::Phase::Live);

        QQmlEngine engine;
        AppGraph::prepareQmlEngine(engine);
        QList<QQmlError> warnings;
        connect(&engine, &QQmlEngine::warnings, this, [&warnings](const QList<QQmlError>& w) { warnings << w; });
        QQmlComponent component(&engine);
        component.setData("import Inferscope.Visualizer\nServerSlotsCard { width: 380 }", QUrl());
        std::unique_ptr<QObject> card(component.createWithInitialProperties({{QStringLiteral("serverSlots"), QVariant::fromValue(&view)}}));
        QVERIFY2(card, qPrintable(component.errorString()));
        const auto text = [&](const char* name) {
            QObject* o = findItem(card.get(), QLatin1String(name));
            return o ? o->property("text").toString() : QStringLiteral("(no %1)").arg(QLatin1String(name));
        };
        QCOMPARE(text("slotsStatus"), QStringLiteral("Live from %1, asked every second while this panel is open.").arg(server.url()));
        QCOMPARE(text("slotTokens0"), QStringLiteral("10 / 256"));
        QCOMPARE(text("slotTokens1"), QStringLiteral("0 / 256"));
        QCOMPARE(findItem(card.get(), QStringLiteral("slotBar0"))->property("used").toDouble(), 10.0);
        QCOMPARE(findItem(card.get(), QStringLiteral("slotBar0"))->property("size").toDouble(), 256.0);
        QCOMPARE(findItem(card.get(), QStringLiteral("totalBar"))->property("used").toDouble(), 12800.0);
        QCOMPARE(findItem(card.get(), QStringLiteral("totalBar"))->property("size").toDouble(), 655360.0);
        QCOMPARE(text("totalBytes"), QStringLiteral("12.5 KiB of 640 KiB in use (a budget of 512 tokens)"));
        QCOMPARE(text("slotsFigure_busy"), QStringLiteral("1 of 2 generating"));
        QCOMPARE(text("slotsFigure_queue"), QStringLiteral("3"));
        QCOMPARE(text("slotsFigure_batch"), QStringLiteral("1 now, 2 at most"));
        QCOMPARE(text("slotsFigure_rate"), QStringLiteral("85.3 tokens/s"));
        QCOMPARE(text("slotsFigure_prefix"), QStringLiteral("3 prompts, 1,536 positions copied"));
        QVERIFY2(warnings.isEmpty(), qPrintable(warnings.isEmpty() ? QString() : warnings.first().toString()));

        // A 404 later (another server at that address): the figures go, the status says why.
        server.answer(http("404 Not Found", "{}"));
        view.setActive(false);
        QVERIFY(nextReply(view, [&] { view.setActive(true); }));
        QVERIFY(text("slotsStatus").contains(QLatin1String("does not report slots")));
        QVERIFY(!findItem(card.get(), QStringLiteral("totalBar"))->property("visible").toBool());
        QVERIFY2(warnings.isEmpty(), qPrintable(warnings.isEmpty() ? QString() : warnings.first().toString()));
    }

    void aServerWithoutSlotsIsSaidOnceAndNotAskedAgain() {
        FakeServer server;
        server.answer(http("404 Not Found", R"({"error":{"message":"no such route SECRET-BODY"}})"));
        ServerSlots view;
        view.setServer(serverAt(server));
        QVERIFY(nextReply(view, [&] { view.setActive(true); }));
        QCOMPARE(view.phase(), ServerSlots::Phase::NotReported);
        QCOMPARE(view.status(), QStringLiteral("%1 does not report slots: GET /slots answered 404. inferscope-cli serve reports them; "
                                               "other servers (vLLM, llama.cpp's) do not, so this view stays empty.").arg(server.url()));
        QVERIFY(!view.polling());
        // Hidden and shown again: still not asked.
        view.setActive(false);
        view.setActive(true);
        QVERIFY(!view.polling());
        QCOMPARE(server.heads.size(), 1);
        QVERIFY(server.heads[0].startsWith("GET /slots HTTP/1.1"));
        QVERIFY(server.heads[0].contains("Authorization: Bearer " + kKey.toUtf8()));
    }

    void llamaCppsListIsAnotherFormat() {
        FakeServer server;
        server.answer(http("200 OK", R"([{"id":0,"n_ctx":4096,"is_processing":false}])"));
        ServerSlots view;
        view.setServer(serverAt(server));
        QVERIFY(nextReply(view, [&] { view.setActive(true); }));
        QCOMPARE(view.phase(), ServerSlots::Phase::NotReported);
        QVERIFY2(view.status().contains(QLatin1String("another form")), qPrintable(view.status()));
        QVERIFY(!view.polling());
    }

    void hostileReportsAreRefused_data() {
        QTest::addColumn<QByteArray>("reply");
        QTest::addColumn<QString>("expected");  // the status: "%1" is the server's address
        const QString refused = QStringLiteral("%1 sent a slot report this app refuses: %2. Nothing of it is shown.");
        QByteArray big = "{\"slots\":[],\"pad\":\"" + QByteArray(100 << 10, 'x') + "\"}";
        QTest::newRow("too big") << http("200 OK", big)
                                 << QStringLiteral("Slots: %1 sent more than 64 kB, more than any answer needs; the connection was closed.");
        QTest::newRow("a count as text") << http("200 OK", withSlotField("kv_tokens", "120"))
                                         << refused.arg(QStringLiteral("%1"), QStringLiteral("slot 0's \u201ckv_tokens\u201d is missing or not a whole number from 0 to 16,777,216"));
        QTest::newRow("a negative count") << http("200 OK", withSlotField("requests", -1))
                                          << refused.arg(QStringLiteral("%1"), QStringLiteral("slot 0's \u201crequests\u201d is missing or not a whole number from 0 to 1,125,899,906,842,624"));
        QTest::newRow("a fraction") << http("200 OK", withSlotField("kv_capacity", 255.5))
                                    << refused.arg(QStringLiteral("%1"), QStringLiteral("slot 0's \u201ckv_capacity\u201d is missing or not a whole number from 0 to 16,777,216"));
        QTest::newRow("a state as a number") << http("200 OK", withSlotField("state", 1))
                                             << refused.arg(QStringLiteral("%1"), QStringLiteral("slot 0's \u201cstate\u201d is neither \u201cidle\u201d nor \u201cgenerating\u201d"));
        QTest::newRow("more tokens than the share") << http("200 OK", withSlotField("kv_tokens", kShare + 1))
                                                    << refused.arg(QStringLiteral("%1"), QStringLiteral("slot 0 holds 257 tokens in a share of 256"));
        QByteArray thousand = "{\"slots\":[";
        for (int i = 0; i < 1000; ++i) thousand += i ? ",{}" : "{}";
        thousand += "]}";
        QTest::newRow("1000 slots") << http("200 OK", thousand)
                                    << refused.arg(QStringLiteral("%1"), QStringLiteral("it lists 1,000 slots, more than the 64 this app shows"));
        QJsonObject lying = reportOf(2, 10);
        lying["kv_bytes_used"] = 0;
        QTest::newRow("totals that do not add up") << http("200 OK", json(lying))
                                                   << refused.arg(QStringLiteral("%1"), QStringLiteral("its totals are not the sums of its slots"));
        QJsonObject bigBatch = reportOf(2, 10);
        bigBatch["largest_batch"] = 3;
        QTest::newRow("a batch larger than the slots") << http("200 OK", json(bigBatch))
                                                       << refused.arg(QStringLiteral("%1"), QStringLiteral("\u201clargest_batch\u201d is missing or not a whole number from 0 to 2"));
        QJsonObject copies = reportOf(2, 10);
        copies["prefix_copies"] = 2;
        copies["prefix_tokens_copied"] = "many";
        QTest::newRow("copied positions as text") << http("200 OK", json(copies))
                                                  << refused.arg(QStringLiteral("%1"), QStringLiteral("\u201cprefix_tokens_copied\u201d is missing or not a whole number from 0 to 1,125,899,906,842,624"));
        QTest::newRow("not JSON") << http("200 OK", "<html>SECRET-BODY</html>") << refused.arg(QStringLiteral("%1"), QStringLiteral("it is not JSON"));
        QTest::newRow("an error page") << http("500 Internal Server Error", "SECRET-BODY") << QStringLiteral("%1 answered HTTP 500 to GET /slots.");
        QTest::newRow("a refused key") << http("401 Unauthorized", "{\"error\":{\"message\":\"SECRET-BODY\"}}")
                                       << QStringLiteral("%1 refused the API key for its slots (HTTP 401).");
    }

    void hostileReportsAreRefused() {
        QFETCH(QByteArray, reply);
        QFETCH(QString, expected);
        FakeServer server;
        server.answer(reply);
        ServerSlots view;
        view.setServer(serverAt(server));
        QVERIFY(nextReply(view, [&] { view.setActive(true); }));
        QCOMPARE(view.phase(), ServerSlots::Phase::Failed);
        QCOMPARE(view.status(), expected.arg(server.url()));
        QVERIFY(!view.status().contains(QLatin1String("SECRET")));
        QVERIFY(view.slotList().isEmpty());
        QCOMPARE(view.budgetTokens(), 0.0);
        QVERIFY(view.polling());  // asked again later: a server may recover
    }

    void aGoodReportAfterARefusedOneIsShown() {
        FakeServer server;
        server.answer(http("200 OK", withSlotField("kv_tokens", "120")));
        ServerSlots view;
        view.setServer(serverAt(server));
        QVERIFY(nextReply(view, [&] { view.setActive(true); }));
        QCOMPARE(view.phase(), ServerSlots::Phase::Failed);
        server.answer(http("200 OK", json(reportOf(3, 42))));
        view.setActive(false);  // shown again: asked at once, not after the retry delay
        QVERIFY(nextReply(view, [&] { view.setActive(true); }));
        QCOMPARE(view.phase(), ServerSlots::Phase::Live);
        QCOMPARE(view.slotList().size(), 3);
        QCOMPARE(view.slotList()[0].toMap()["kvTokens"].toDouble(), 42.0);
        QCOMPARE(view.bytesUsed(), 42.0 * kKvBytesPerToken);
        QCOMPARE(view.bytesReserved(), 3.0 * kShare * kKvBytesPerToken);
        QCOMPARE(view.prefixCopies(), -1.0);  // a report without the prefix fields: not said
    }

    void aRedirectToAnotherPortIsNotFollowed() {
        FakeServer other;
        other.answer(http("200 OK", json(reportOf(2, 0))));
        FakeServer server;
        server.answer("HTTP/1.1 307 Temporary Redirect\r\nLocation: http://127.0.0.1:" + QByteArray::number(other.port()) +
                      "/slots\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
        ServerSlots view;
        view.setServer(serverAt(server));
        QVERIFY(nextReply(view, [&] { view.setActive(true); }));
        QCOMPARE(view.phase(), ServerSlots::Phase::Failed);
        QVERIFY2(view.status().startsWith(QStringLiteral("%1 redirected the request to another server (%2)").arg(server.url(), other.url())),
                 qPrintable(view.status()));
        QVERIFY(other.heads.isEmpty());  // the key never went there
    }

    void aServerThatSaysNothingMeetsTheDeadline() {
        FakeServer server;
        server.respond = [](QTcpSocket*) {};  // reads the request, answers nothing
        ServerSlots view;
        view.setTimeouts({2000, 300, 300});
        view.setServer(serverAt(server));
        QVERIFY(nextReply(view, [&] { view.setActive(true); }));
        QCOMPARE(view.phase(), ServerSlots::Phase::Failed);
        QCOMPARE(view.status(), QStringLiteral("Slots: %1 accepted the request but sent nothing for 0.3 s; the request was given up.").arg(server.url()));
    }
};

QTEST_MAIN(TestServerSlots)
#include "tst_server_slots.moc"
