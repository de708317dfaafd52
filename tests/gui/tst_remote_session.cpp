// The app's controllers (AppGraph, as the window uses them) connected to a real
// `inferscope-cli serve` on 127.0.0.1 at an ephemeral port: models listed, a greedy chat streamed
// through Qt Network equal to the server's non-streamed answer token for token (text, logprobs,
// the 20 alternatives and their bytes), Stop closing the stream, and the errors a person meets:
// a wrong or missing API key, nothing listening, something that is not an OpenAI server.
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QSignalSpy>
#include <QTcpServer>
#include <QTcpSocket>
#include <QtTest>
#include <cmath>
#include <nlohmann/json.hpp>

#include "app_stack.h"
#include "chat_fixture.h"
#include "serve_process.h"

#include "app/qml_modules.h"  // Q_IMPORT_QML_PLUGIN of each module

using namespace inferscope;
using namespace inferscope::testing_gui;
using inferscope::testing_serve::ServeProcess;

namespace {

const std::string kModel = INFERSCOPE_RESOURCES_DIR "/models/stories260K.gguf";
constexpr int kMaxTokens = 24;

QString urlOf(const ServeProcess& server) { return QStringLiteral("http://127.0.0.1:%1").arg(server.port()); }

// A probability the app shows against the server's logprob for the same token of the same greedy
// answer asked again. Not bit-equal: the second request finds its prompt in the server's KV cache,
// so its last prompt token runs through the decode kernel instead of prefill's matrix multiply,
// and the rounding of those logits differs by up to ~1e-5 (more under the AVX2 kernels than the
// AVX-512 ones); the JSON round trip of a double adds nothing. A wrong logit, normaliser or token
// is off by orders of magnitude more.
bool sameProbability(float p, double logprob) { return std::abs(std::log(double(p)) - logprob) <= 1e-4; }

// Connects the fixture's engine and waits for Ready (or the failure's message).
QString connectTo(AppGraph& f, const QString& url, const QString& key, const QString& model) {
    QSignalSpy failed(f.engine.get(), &EngineController::loadFailed);
    f.engine->connectToServer(url, key, model);
    const bool done = QTest::qWaitFor([&] { return f.engine->state() != EngineController::State::Loading; }, 30000);
    if (!done) return QStringLiteral("timed out");
    return failed.isEmpty() ? QString() : failed.first().first().toString();
}

// A port nothing listens on (bound, then closed).
quint16 closedPort() {
    QTcpServer s;
    s.listen(QHostAddress::LocalHost, 0);
    const quint16 port = s.serverPort();
    s.close();
    return port;
}

// An OpenAI-like server in the test, for the variations inferscope-cli serve never sends:
// /v1/models lists "fake"; /v1/chat/completions answers `chat` as given (status line, headers
// and body), written in pieces of `piece` bytes. Each request on its own connection.
class FakeServer : public QObject {
public:
    QByteArray chat;
    int piece = 7;
    QByteArray lastBody;
    FakeServer() {
        server_.listen(QHostAddress::LocalHost, 0);
        QObject::connect(&server_, &QTcpServer::newConnection, this, [this] {
            QTcpSocket* s = server_.nextPendingConnection();
            auto buffer = std::make_shared<QByteArray>();
            QObject::connect(s, &QTcpSocket::readyRead, s, [this, s, buffer] {
                buffer->append(s->readAll());
                const qsizetype end = buffer->indexOf("\r\n\r\n");
                if (end < 0) return;
                const qsizetype lengthAt = buffer->toLower().indexOf("content-length:");
                const int length = lengthAt < 0 ? 0 : buffer->mid(lengthAt + 15, buffer->indexOf("\r\n", lengthAt) - lengthAt - 15).trimmed().toInt();
                if (buffer->size() < end + 4 + length) return;
                const QByteArray response = buffer->startsWith("GET /v1/models")
                    ? QByteArray("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n{\"object\":\"list\",\"data\":[{\"id\":\"fake\"}]}")
                    : chat;
                lastBody = buffer->mid(end + 4, length);
                for (qsizetype at = 0; at < response.size(); at += piece) {
                    s->write(response.mid(at, piece));
                    s->flush();
                }
                s->disconnectFromHost();
            });
        });
    }
    QString url() const { return QStringLiteral("http://127.0.0.1:%1").arg(server_.serverPort()); }

private:
    QTcpServer server_;
};

QByteArray sse(const QByteArray& events) {
    return "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n" + events;
}

}  // namespace

class TestRemoteSession : public QObject {
    Q_OBJECT
    std::unique_ptr<ServeProcess> server_;

private slots:
    void initTestCase() {
        useTestLocations();
        server_ = std::make_unique<ServeProcess>(std::vector<std::string>{"--model", kModel});
        QVERIFY2(server_->port() > 0 && server_->waitReady(), "inferscope-cli serve did not start");
    }
    void cleanupTestCase() { server_.reset(); }

    void listsModels() {
        ChatFixture f(kMaxTokens);
        f.engine->listServerModels(QStringLiteral("127.0.0.1:%1/v1/").arg(server_->port()), QString());
        QTRY_VERIFY_WITH_TIMEOUT(!f.engine->listingModels(), 20000);
        QCOMPARE(f.engine->serverError(), QString());
        QCOMPARE(f.engine->serverModels(), QStringList{"stories260K"});
    }

    void greedyChatEqualsTheServersAnswer() {
        ChatFixture f(kMaxTokens);
        QCOMPARE(connectTo(f, urlOf(*server_), QString(), "stories260K"), QString());
        // A server: its own template, no tokenizer, cache or insides here, nothing timed on this machine.
        const BackendAbilities can = f.engine->abilities();
        QVERIFY(can.overNetwork && can.ownTemplate);
        QVERIFY(!can.tokenizes && !can.showsCache && !can.looksInside && !can.runsExperiments);
        QCOMPARE(f.engine->serverUrl(), urlOf(*server_));
        QCOMPARE(f.engine->modelName(), QStringLiteral("stories260K"));
        QCOMPARE(f.engine->modelPath(), urlOf(*server_) + "#stories260K");
        QCOMPARE(EngineController::entryLabel(f.engine->modelPath()), QStringLiteral("stories260K @ 127.0.0.1:%1").arg(server_->port()));
        QCOMPARE(f.chat->mode(), ChatController::Mode::Chat);
        QVERIFY(f.answer(QStringLiteral("Tell me a story about a cat.")));
        const ChatMessage& answer = f.last();
        QCOMPARE(answer.finishReason, Message::MaxTokens);
        QCOMPARE(int(answer.steps.size()), kMaxTokens);

        // The same request, not streamed, straight from the server.
        const nlohmann::json request{{"model", "stories260K"},
                                     {"messages", {{{"role", "user"}, {"content", "Tell me a story about a cat."}}}},
                                     {"temperature", 0}, {"max_tokens", kMaxTokens}, {"logprobs", true}, {"top_logprobs", 20}};
        auto http = server_->client();
        const auto res = http.post("/v1/chat/completions", request.dump());
        QVERIFY(res && res->status == 200);
        const QJsonObject reference = QJsonDocument::fromJson(QByteArray::fromStdString(res->body)).object();
        const QJsonObject choice = reference["choices"].toArray().first().toObject();
        const QString content = choice["message"].toObject()["content"].toString();
        const QJsonArray tokens = choice["logprobs"].toObject()["content"].toArray();
        QCOMPARE(tokens.size(), kMaxTokens);

        std::string streamed;
        for (const StepRecord& s : answer.steps) streamed += s.piece;
        QCOMPARE(QString::fromStdString(streamed), content);
        QCOMPARE(answer.text, content.startsWith(' ') ? content.mid(1) : content);  // as a chat answer is shown
        for (int i = 0; i < kMaxTokens; ++i) {
            const StepRecord& step = answer.steps[size_t(i)];
            const QJsonObject token = tokens[i].toObject();
            QCOMPARE(QByteArray::fromStdString(step.piece), tokenBytes(token));
            QVERIFY2(sameProbability(step.sample.pRaw, token["logprob"].toDouble()),
                     qPrintable(QStringLiteral("step %1: p %2, server's logprob %3").arg(i).arg(step.sample.pRaw).arg(token["logprob"].toDouble())));
            const QJsonArray top = token["top_logprobs"].toArray();
            QCOMPARE(top.size(), 20);
            QCOMPARE(int(step.sample.top.size()), 20);
            bool chosenListed = false;
            for (int j = 0; j < 20; ++j) {
                const CandidateRecord& c = step.sample.top[size_t(j)];
                const QJsonObject alt = top[j].toObject();
                QCOMPARE(QByteArray::fromStdString(*f.engine->tokenBytes(c.id)), tokenBytes(alt));
                QVERIFY2(sameProbability(c.p[size_t(SamplerStage::Raw)], alt["logprob"].toDouble()),
                         qPrintable(QStringLiteral("step %1, alternative %2").arg(i).arg(j)));
                chosenListed = chosenListed || c.id == step.sample.id;
            }
            QVERIFY2(chosenListed, qPrintable(QStringLiteral("step %1: the pick is not among the alternatives").arg(i)));
            // Greedy on Inferscope's server: its extension says the pick had all of the final mass.
            QCOMPARE(step.sample.pFinal, 1.0f);
            QCOMPARE(step.sample.survivors[size_t(SamplerStage::Temperature)], 1);
        }
        QCOMPARE(f.engine->reportedStages().size(), kSamplerStageCount);
        // The client's measurements: the network's time to first token and the decode rate.
        QVERIFY(f.engine->timeToFirstTokenMs() > 0);
        QVERIFY(f.engine->decodeTokensPerSecond() > 0);
        QVERIFY(answer.stats.timeToFirstTokenMs > 0);
        // No KV cache figures and nothing inside the model from a server.
        QCOMPARE(f.engine->kvBytesReserved(), 0.0);
        // The KV cache setting is kept for the next file, not reset by the server.
        QSignalSpy refused(f.engine.get(), &EngineController::kvTypeRefused);
        f.settings->setKvType(QStringLiteral("q8_0"));
        QCOMPARE(refused.size(), 0);
        QCOMPARE(f.settings->kvType(), QStringLiteral("q8_0"));
        QCOMPARE(f.engine->kvType(), QString());
        QSignalSpy inspected(f.engine.get(), &EngineController::inspectionArrived);
        f.engine->requestInspection(InspectionRequest{});
        QVERIFY(inspected.wait(5000));
        QCOMPARE(QString::fromStdString(inspected.first().first().value<InspectionReply>().error),
                 QStringLiteral("A remote server does not expose what happens inside its model."));

        // Branching from the second candidate of token 4: the server continues the answer so far
        // with it (the assistant's message, continue_final_message), as it answers that request itself.
        const int row = f.chat->messages()->count() - 1;
        const std::vector<StepRecord> before = answer.steps;
        const CandidateRecord alternative = before[3].sample.top[1];
        QVERIFY(alternative.id != before[3].sample.id);
        QVERIFY(f.answer([&] { return f.chat->branchFrom(row, 3, alternative.id); }));
        const ChatMessage& branched = f.chat->messages()->at(row);
        QCOMPARE(int(branched.steps.size()), 4 + kMaxTokens);
        std::string soFar;
        for (int i = 0; i < 3; ++i) {
            QCOMPARE(branched.steps[size_t(i)].sample.id, before[size_t(i)].sample.id);
            soFar += before[size_t(i)].piece;
        }
        QCOMPARE(branched.steps[3].sample.id, alternative.id);
        QCOMPARE(branched.steps[3].piece, *f.engine->tokenBytes(alternative.id));
        soFar += branched.steps[3].piece;
        std::string continued;
        for (size_t i = 4; i < branched.steps.size(); ++i) continued += branched.steps[i].piece;
        const std::string sent = soFar.starts_with(' ') ? soFar.substr(1) : soFar;  // the answer as shown and stored
        const nlohmann::json branchRequest{{"model", "stories260K"},
                                           {"messages", {{{"role", "user"}, {"content", "Tell me a story about a cat."}},
                                                         {{"role", "assistant"}, {"content", sent}}}},
                                           {"continue_final_message", true}, {"temperature", 0}, {"max_tokens", kMaxTokens}};
        const auto branchRes = http.post("/v1/chat/completions", branchRequest.dump());
        QVERIFY(branchRes && branchRes->status == 200);
        const auto branchReference = nlohmann::json::parse(branchRes->body);
        QCOMPARE(QString::fromStdString(continued), QString::fromStdString(branchReference["choices"][0]["message"]["content"].get<std::string>()));
        QVERIFY(branched.text.startsWith(QString::fromStdString(sent)));
        QCOMPARE(int(branched.variants.size()), 2);  // the first version stays reachable

        // A follow-up sends the whole conversation again as messages; it still answers.
        QVERIFY(f.answer(QStringLiteral("And then?")));
        QCOMPARE(f.last().finishReason, Message::MaxTokens);
    }

    void stopClosesTheStream() {
        ChatFixture f(400);
        QCOMPARE(connectTo(f, urlOf(*server_), QString(), "stories260K"), QString());
        // Stop as soon as the first tokens arrive, from inside the arrival (nothing else to wait for).
        QObject::connect(f.engine.get(), &EngineController::stepsArrived, f.chat.get(), [&] { f.chat->stop(); });
        QVERIFY(f.answer(QStringLiteral("Once upon a time")));
        QCOMPARE(f.last().finishReason, Message::Cancelled);
        QVERIFY(!f.last().steps.empty());
        QVERIFY(int(f.last().steps.size()) < 400);
        QCOMPARE(f.engine->state(), EngineController::State::Ready);
        auto http = server_->client();
        const auto health = http.get("/health");
        QVERIFY(health && health->status == 200);
    }

    void apiKeys() {
        ServeProcess locked({"--model", kModel, "--api-key", "sesame"});
        QVERIFY(locked.port() > 0 && locked.waitReady("sesame"));
        ChatFixture f(4);
        QCOMPARE(connectTo(f, urlOf(locked), QStringLiteral("wrong"), "stories260K"),
                 QStringLiteral("%1 refused the API key (401 Unauthorized): the API key is not this server's").arg(urlOf(locked)));
        QVERIFY(!f.engine->hasModel());
        QVERIFY(connectTo(f, urlOf(locked), QString(), "stories260K").startsWith(urlOf(locked) + " needs an API key (401 Unauthorized)"));
        QCOMPARE(connectTo(f, urlOf(locked), QStringLiteral("sesame"), "stories260K"), QString());
        QVERIFY(f.answer(QStringLiteral("Hello")));
        QCOMPARE(int(f.last().steps.size()), 4);

        // From the recent list (its entry, as AppSettings keeps it): the key is remembered for this
        // run only, so a new run (another graph) is asked for it again.
        const QString entry = f.engine->modelPath();
        QCOMPARE(entry, urlOf(locked) + "#stories260K");
        QSignalSpy failed(f.engine.get(), &EngineController::loadFailed);
        f.engine->loadModel(entry);
        QTRY_COMPARE_WITH_TIMEOUT(f.engine->state(), EngineController::State::Ready, 20000);
        QVERIFY(failed.isEmpty());
        ChatFixture nextRun(4);
        QSignalSpy nextFailed(nextRun.engine.get(), &EngineController::loadFailed);
        nextRun.engine->loadModel(entry);
        QVERIFY(nextFailed.wait(20000));
        QVERIFY(nextFailed.first().first().toString().startsWith(urlOf(locked) + " needs an API key (401 Unauthorized)"));
        QVERIFY(!nextRun.engine->hasModel());
    }

    // "Remember the key in the system keyring": written once the server accepted the key, found
    // again (and listed with) when the address is typed in the next dialog, forgotten when the box
    // is cleared. The graph's keyring is in memory here, the system's in the app.
    void rememberedKeyInTheWindow() {
        ServeProcess locked({"--model", kModel, "--api-key", "sesame"});
        QVERIFY(locked.port() > 0 && locked.waitReady("sesame"));
        inferscope::testing_app::AppStack app(QStringLiteral(":memory:"));
        app.settings->setSessionWelcomeSeen(true);
        QVERIFY(app.showWindow());
        QObject* dialog = app.find<QObject>(QStringLiteral("connectDialog"));
        QObject* url = app.find<QObject>(QStringLiteral("serverUrl"));
        QObject* key = app.find<QObject>(QStringLiteral("serverKey"));
        QObject* remember = app.find<QObject>(QStringLiteral("rememberKey"));
        QObject* models = app.find<QObject>(QStringLiteral("serverModel"));
        QObject* connectButton = app.find<QObject>(QStringLiteral("connectButton"));
        QVERIFY(dialog && url && key && remember && models && connectButton);
        QSignalSpy saved(app.keyring.get(), &ServerKeyring::saved);

        QMetaObject::invokeMethod(dialog, "open");
        QTRY_VERIFY(dialog->property("opened").toBool());
        QVERIFY(!remember->property("enabled").toBool());  // nothing to remember yet
        url->setProperty("text", urlOf(locked) + "/v1/");
        key->setProperty("text", QStringLiteral("sesame"));
        QVERIFY(remember->property("enabled").toBool());
        remember->setProperty("checked", true);
        QMetaObject::invokeMethod(dialog, "list");
        QTRY_COMPARE_WITH_TIMEOUT(models->property("count").toInt(), 1, 20000);
        QTRY_VERIFY(connectButton->property("enabled").toBool());
        QMetaObject::invokeMethod(connectButton, "clicked");
        QTRY_VERIFY_WITH_TIMEOUT(app.engine->abilities().overNetwork && app.engine->state() == EngineController::State::Ready, 20000);
        QTRY_COMPARE(saved.count(), 1);
        QCOMPARE(saved.first().first().toString(), urlOf(locked));  // the address without "/v1/"

        // The next time: the address alone brings the key back, and the models are listed with it.
        QSignalSpy found(app.keyring.get(), &ServerKeyring::keyFound);
        key->setProperty("text", QString());
        remember->setProperty("checked", false);
        QMetaObject::invokeMethod(dialog, "open");
        QTRY_VERIFY(dialog->property("opened").toBool());
        url->setProperty("text", urlOf(locked));
        QMetaObject::invokeMethod(dialog, "list");
        QTRY_COMPARE(found.count(), 1);
        QCOMPARE(key->property("text").toString(), QStringLiteral("sesame"));
        QVERIFY(remember->property("checked").toBool());
        QTRY_COMPARE_WITH_TIMEOUT(models->property("count").toInt(), 1, 20000);
        QCOMPARE(app.find<QObject>(QStringLiteral("serverError"))->property("text").toString(), QString());

        // Cleared box, connected again: the key is forgotten.
        remember->setProperty("checked", false);
        QTRY_VERIFY(connectButton->property("enabled").toBool());
        QMetaObject::invokeMethod(connectButton, "clicked");
        QTRY_COMPARE_WITH_TIMEOUT(saved.count(), 2, 20000);
        found.clear();
        app.keyring->lookUp(urlOf(locked));
        QCOMPARE(found.count(), 0);  // the in-memory store answers at once
        QCOMPARE(app.keyring->problem(), QString());
        app.close();
    }

    // A keyring that cannot be used (no Secret Service on the bus) is said in the dialog's words,
    // and nothing is kept anywhere.
    void keyringThatFails() {
        struct Broken : SecretStore {
            void read(const QString&, std::function<void(std::optional<QString>, QString)> done) override { done(std::nullopt, "No keyring daemon"); }
            void write(const QString&, const QString&, std::function<void(QString)> done) override { done("No keyring daemon"); }
            void remove(const QString&, std::function<void(QString)> done) override { done("No keyring daemon"); }
        };
        ServerKeyring keyring(nullptr, std::make_unique<Broken>());
        QSignalSpy found(&keyring, &ServerKeyring::keyFound);
        QSignalSpy saved(&keyring, &ServerKeyring::saved);
        keyring.lookUp(QStringLiteral("http://127.0.0.1:9"));
        QCOMPARE(found.count(), 0);
        QCOMPARE(keyring.problem(), QString());  // looking up is quiet: nobody asked to remember yet
        keyring.connectingWith(QStringLiteral("http://127.0.0.1:9/v1"), QStringLiteral("k"), true);
        keyring.connected(QStringLiteral("http://127.0.0.1:9"));
        QCOMPARE(saved.count(), 0);
        QCOMPARE(keyring.problem(),
                 QStringLiteral("The system keyring could not be used (No keyring daemon): the key is kept for this run only."));
        // Another server's connection is not this one's: nothing pending is written to it.
        keyring.connectingWith(QStringLiteral("http://127.0.0.1:9"), QStringLiteral("k"), true);
        keyring.connected(QStringLiteral("http://127.0.0.1:10"));
        QCOMPARE(saved.count(), 0);
    }

    // The window's "Connect to a server…" dialog: the address typed, the models listed, Connect;
    // then a chat's alternatives in the Probabilities panel. A wrong address says why under the fields.
    void connectDialogInTheWindow() {
        inferscope::testing_app::AppStack app(QStringLiteral(":memory:"));
        app.settings->setSessionWelcomeSeen(true);
        QVERIFY(app.showWindow());
        QObject* dialog = app.window()->findChild<QObject*>(QStringLiteral("connectDialog"));
        QVERIFY(dialog);
        QObject* url = app.window()->findChild<QObject*>(QStringLiteral("serverUrl"));
        QObject* models = app.window()->findChild<QObject*>(QStringLiteral("serverModel"));
        QObject* error = app.window()->findChild<QObject*>(QStringLiteral("serverError"));
        QObject* connectButton = app.window()->findChild<QObject*>(QStringLiteral("connectButton"));
        QVERIFY(url && models && error && connectButton);
        QMetaObject::invokeMethod(dialog, "open");
        QTRY_VERIFY(dialog->property("opened").toBool());

        url->setProperty("text", QStringLiteral("http://127.0.0.1:%1").arg(closedPort()));
        QMetaObject::invokeMethod(dialog, "list");
        QTRY_VERIFY_WITH_TIMEOUT(error->property("text").toString().startsWith("Could not reach"), 20000);
        QVERIFY(!connectButton->property("enabled").toBool());

        url->setProperty("text", urlOf(*server_));
        QMetaObject::invokeMethod(dialog, "list");
        QTRY_COMPARE_WITH_TIMEOUT(models->property("count").toInt(), 1, 20000);
        QCOMPARE(models->property("currentText").toString(), QStringLiteral("stories260K"));
        QCOMPARE(error->property("text").toString(), QString());
        QTRY_VERIFY(connectButton->property("enabled").toBool());
        app.window()->grabWindow().save(QDir(QCoreApplication::applicationDirPath()).filePath("remote-connect-dialog.png"));
        QMetaObject::invokeMethod(connectButton, "clicked");
        QTRY_VERIFY_WITH_TIMEOUT(app.engine->abilities().overNetwork && app.engine->state() == EngineController::State::Ready, 20000);
        QVERIFY(!dialog->property("visible").toBool());
        // Remembered as a recent model, shown by name and server.
        QCOMPARE(EngineController::entryLabel(app.engine->modelPath()), QStringLiteral("stories260K @ 127.0.0.1:%1").arg(server_->port()));

        app.settings->setInspectorTab(QStringLiteral("probabilities"));
        SamplerParams greedy;
        greedy.temperature = 0;
        app.chat->setSamplerOverride(greedy);
        app.chat->setMaxTokensOverride(12);
        QSignalSpy done(app.chat.get(), &ChatController::answerFinished);
        QVERIFY(app.chat->send(QStringLiteral("Tell me a story about a little cat.")));
        QVERIFY(done.wait(20000));
        QTRY_COMPARE(app.inspector->candidateModel()->rowCount(), 20);
        QCOMPARE(app.inspector->replay()->note(),
                 QStringLiteral("This answer came from a server, which sends each token's most likely alternatives, not the logits a replay needs."));
        QObject* note = app.window()->findChild<QObject*>(QStringLiteral("layersRemoteNote"));
        QVERIFY(note && note->property("text").toString().startsWith("stories260K runs on a server"));
        app.window()->grabWindow().save(QDir(QCoreApplication::applicationDirPath()).filePath("remote-window.png"));
        app.close();
    }

    // A server that hangs up mid-answer: the tokens that arrived are kept, stored, marked
    // interrupted and reopen as such; Continue asks the same server to go on from them (a new
    // version), and is refused to another model.
    void aCutOffAnswerIsKeptStoredAndContinued() {
        auto token = [](const char* text) {
            return QByteArray("data: {\"choices\":[{\"delta\":{\"content\":\"") + text + "\"},\"finish_reason\":null}]}\n\n";
        };
        FakeServer fake;
        fake.chat = sse(token("Once") + token(" upon") + token(" a"));  // then the connection closes
        ChatFixture f(16);
        QCOMPARE(connectTo(f, fake.url(), QString(), "fake"), QString());
        QSignalSpy finished(f.chat.get(), &ChatController::answerFinished);
        QVERIFY(f.chat->send(QStringLiteral("Tell me a story.")));
        QTRY_VERIFY_WITH_TIMEOUT(!f.chat->generating(), 20000);
        QCOMPARE(finished.count(), 0);
        QCOMPARE(f.chat->lastError(),
                 QStringLiteral("The answer from %1 stopped after 3 tokens: the connection closed before the server said the answer was complete.").arg(fake.url()));
        QCOMPARE(f.chat->messages()->count(), 2);
        QCOMPARE(f.last().text, QStringLiteral("Once upon a"));
        QCOMPARE(f.last().finishReason, Message::Failed);
        QCOMPARE(int(f.last().steps.size()), 3);
        QVERIFY(f.last().storeId != 0);
        QVERIFY(f.chat->canContinue());

        // Reopened (as after a restart): the same three tokens, still interrupted.
        const qint64 id = f.chat->conversationId();
        f.chat->newConversation();
        QVERIFY(f.chat->openConversation(id));
        QCOMPARE(f.chat->messages()->count(), 2);
        QCOMPARE(f.last().text, QStringLiteral("Once upon a"));
        QCOMPARE(f.last().finishReason, Message::Failed);
        QCOMPARE(int(f.last().steps.size()), 3);
        QVERIFY(f.chat->canContinue());

        fake.chat = sse(token(" time") + "data: {\"choices\":[{\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n");
        QVERIFY(f.answer([&] { return f.chat->continueAnswer(); }));
        const QJsonObject body = QJsonDocument::fromJson(fake.lastBody).object();
        QVERIFY(body["continue_final_message"].toBool());
        const QJsonArray messages = body["messages"].toArray();
        QCOMPARE(messages.last().toObject(), (QJsonObject{{"role", "assistant"}, {"content", "Once upon a"}}));
        QCOMPARE(f.last().text, QStringLiteral("Once upon a time"));
        QCOMPARE(f.last().finishReason, Message::EndOfGeneration);
        QCOMPARE(int(f.last().steps.size()), 4);
        QCOMPARE(int(f.last().variants.size()), 2);  // the interrupted version stays reachable
        QVERIFY(!f.chat->canContinue());

        // Another model cannot continue an interrupted answer it did not write.
        fake.chat = sse(token("Once"));
        QVERIFY(f.chat->regenerate());
        QTRY_VERIFY_WITH_TIMEOUT(!f.chat->generating(), 20000);
        QCOMPARE(f.last().finishReason, Message::Failed);
        QVERIFY(f.chat->canContinue());
        QCOMPARE(connectTo(f, urlOf(*server_), QString(), "stories260K"), QString());
        QVERIFY(!f.chat->canContinue());
        QVERIFY(!f.chat->continueAnswer());
    }

    // What the window says of a cut-off answer: marked interrupted under the text, Retry and
    // Continue beside it, and the error bar naming what happened.
    void aCutOffAnswerInTheWindow() {
        FakeServer fake;
        fake.chat = sse("data: {\"choices\":[{\"delta\":{\"content\":\"Once upon\"},\"finish_reason\":null}]}\n\n");
        inferscope::testing_app::AppStack app(QStringLiteral(":memory:"));
        app.settings->setSessionWelcomeSeen(true);
        QVERIFY(app.showWindow());
        app.engine->connectToServer(fake.url(), QString(), QStringLiteral("fake"));
        QTRY_VERIFY_WITH_TIMEOUT(app.engine->abilities().overNetwork && app.engine->state() == EngineController::State::Ready, 20000);
        QVERIFY(app.chat->send(QStringLiteral("Tell me a story.")));
        QTRY_VERIFY_WITH_TIMEOUT(!app.chat->generating() && !app.chat->lastError().isEmpty(), 20000);
        // The chat's delegates are in the visual tree only.
        auto visible = [&](const QString& name) -> QQuickItem* {
            QQuickItem* found = nullptr;
            std::function<void(QQuickItem*)> walk = [&](QQuickItem* i) {
                if (!i->isVisible()) return;
                if (i->objectName() == name) found = i;
                for (QQuickItem* c : i->childItems()) walk(c);
            };
            walk(app.window()->contentItem());
            return found;
        };
        QTRY_VERIFY(visible(QStringLiteral("interruptedNote")));
        QCOMPARE(visible(QStringLiteral("interruptedNote"))->property("text").toString(),
                 QStringLiteral("Interrupted: the answer stopped before it was complete; what arrived is kept."));
        QQuickItem* continueButton = visible(QStringLiteral("continueButton"));
        QQuickItem* retryButton = visible(QStringLiteral("regenerateButton"));
        QVERIFY(continueButton && retryButton);
        QVERIFY(continueButton->isEnabled());
        QCOMPARE(retryButton->property("text").toString(), QStringLiteral("Retry"));
        app.window()->grabWindow().save(QDir(QCoreApplication::applicationDirPath()).filePath("remote-interrupted.png"));
        app.close();
    }

    // Issue 27: the Timeline and Probabilities panels read the selected answer's origin, not the
    // backend connected now. A local stories260K answer, then a server connected: its Timeline
    // still reads the engine's figures (no "server's count", no "network included") and its
    // candidates their texts (before: raw ids); a server's answer is labelled as measured over
    // the network, its tok/s the footer's; selecting the local answer again shows it as it was.
    void aLocalAnswerKeepsItsOriginWhenAServerIsConnected() {
        inferscope::testing_app::AppStack app(QStringLiteral(":memory:"));
        app.settings->setSessionWelcomeSeen(true);
        QVERIFY(app.showWindow());
        QVERIFY(loadAndWait(*app.engine, QString::fromStdString(kModel)));
        SamplerParams greedy;
        greedy.temperature = 0;
        app.chat->setSamplerOverride(greedy);
        app.chat->setMaxTokensOverride(12);
        app.settings->setInspectorTab(QStringLiteral("timeline"));
        QSignalSpy done(app.chat.get(), &ChatController::answerFinished);
        QVERIFY(app.chat->send(QStringLiteral("Once upon a time")));
        QVERIFY(done.wait(20000));
        const int localRow = app.chat->messages()->count() - 1;
        QObject* prefill = app.window()->findChild<QObject*>(QStringLiteral("prefillSummary"));
        QObject* decode = app.window()->findChild<QObject*>(QStringLiteral("decodeSummary"));
        QVERIFY(prefill && decode);
        QTRY_VERIFY(prefill->property("text").toString().contains(QStringLiteral("GFLOP/s")));
        const QString localPrefill = prefill->property("text").toString();
        const QString localDecode = decode->property("text").toString();
        const double localRate = app.chat->messages()->at(localRow).stats.decodeTokensPerSecond;
        QVERIFY(localDecode.contains(QStringLiteral(" · %1 tok/s · ").arg(localRate >= 100 ? QString::number(localRate, 'f', 0) : QString::number(localRate, 'f', 1))));
        QVERIFY2(localDecode.contains(QStringLiteral("GB/s read")), qPrintable(localDecode));
        const auto candidateTexts = [&] {
            QStringList texts;
            for (const QVariant& c : app.inspector->candidates()) texts << c.toMap().value("token").toString();
            return texts;
        };
        app.inspector->select(localRow, 2);
        const QStringList localCandidates = candidateTexts();
        QCOMPARE(localCandidates.size(), 20);

        QCOMPARE(connectTo(app, urlOf(*server_), QString(), "stories260K"), QString());
        QVERIFY(app.engine->abilities().overNetwork);
        QCOMPARE(app.inspector->row(), localRow);
        QVERIFY(!app.inspector->answerRemote());
        QCOMPARE(candidateTexts(), localCandidates);
        // Still the engine's figures of that answer, its memory traffic included: the answer keeps
        // what a pass of its model reads, though that model is no longer loaded.
        QVERIFY(localDecode.contains(QStringLiteral(" GB/s read")));
        QTRY_COMPARE(decode->property("text").toString(), localDecode);
        const QString connectedPrefill = prefill->property("text").toString();
        const QString connectedDecode = decode->property("text").toString();
        QVERIFY2(connectedPrefill.startsWith(localPrefill.left(localPrefill.indexOf(QStringLiteral(" tok/s")))) &&
                     !connectedPrefill.contains(QStringLiteral("server's count")) && !connectedPrefill.contains(QStringLiteral("network")),
                 qPrintable(connectedPrefill));

        // The server's answer (chat mode: the server applies its template).
        app.chat->setMode(ChatController::Mode::Chat);
        QVERIFY(app.chat->send(QStringLiteral("Tell me more.")));
        QVERIFY(done.wait(20000));
        const int remoteRow = app.chat->messages()->count() - 1;
        QTRY_COMPARE(app.timeline->row(), remoteRow);
        QVERIFY(app.inspector->answerRemote());
        QTRY_VERIFY2(prefill->property("text").toString().contains(QStringLiteral("(the server's count)")) &&
                         prefill->property("text").toString().contains(QStringLiteral("network included")),
                     qPrintable(prefill->property("text").toString()));
        const double remoteRate = app.chat->messages()->at(remoteRow).stats.decodeTokensPerSecond;
        QVERIFY(remoteRate > 0);
        const QString remoteDecode = decode->property("text").toString();
        QVERIFY2(remoteDecode.contains(QStringLiteral(" · %1 tok/s (this client's clock)").arg(remoteRate >= 100 ? QString::number(remoteRate, 'f', 0) : QString::number(remoteRate, 'f', 1))),
                 qPrintable(remoteDecode));

        // The local answer again: as it was.
        app.inspector->select(localRow, 2);
        QTRY_COMPARE(prefill->property("text").toString(), connectedPrefill);
        QCOMPARE(decode->property("text").toString(), connectedDecode);
        QCOMPARE(candidateTexts(), localCandidates);
        app.close();
    }

    // What the request carries: the conversation as messages and the sampler's fields.
    void requestBody() {
        FakeServer fake;
        fake.chat = sse("data: {\"choices\":[{\"delta\":{\"content\":\"ok\"},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n");
        ChatFixture f(7);
        SamplerParams p;
        p.temperature = 0.5f;
        p.topK = 12;
        p.topP = 0.9f;
        p.minP = 0.1f;
        p.repeatPenalty = 1.5f;
        p.seed = 1234;
        f.chat->setSamplerOverride(p);
        f.chat->setSystemPrompt(QStringLiteral("Be brief."));
        QCOMPARE(connectTo(f, fake.url(), QString(), "fake"), QString());
        QVERIFY(f.answer(QStringLiteral("Hi")));
        const QJsonObject body = QJsonDocument::fromJson(fake.lastBody).object();
        QCOMPARE(body["model"].toString(), QStringLiteral("fake"));
        QCOMPARE(body["messages"].toArray(), (QJsonArray{QJsonObject{{"role", "system"}, {"content", "Be brief."}},
                                                         QJsonObject{{"role", "user"}, {"content", "Hi"}}}));
        QCOMPARE(body["stream"].toBool(), true);
        QCOMPARE(body["logprobs"].toBool(), true);
        QCOMPARE(body["top_logprobs"].toInt(), 20);
        QCOMPARE(body["max_tokens"].toInt(), 7);
        QCOMPARE(body["temperature"].toDouble(), 0.5);
        QCOMPARE(body["top_k"].toInt(), 12);
        QCOMPARE(float(body["top_p"].toDouble()), 0.9f);
        QCOMPARE(float(body["min_p"].toDouble()), 0.1f);
        QCOMPARE(body["repeat_penalty"].toDouble(), 1.5);
        QCOMPARE(body["repetition_penalty"].toDouble(), 1.5);
        QCOMPARE(body["seed"].toInteger(), 1234);
        QVERIFY(!body.contains("continue_final_message"));  // only a branch continues the last message
        QCOMPARE(f.last().text, QStringLiteral("ok"));
    }

    // Structured output goes to a server as OpenAI's response_format (json_object, json_schema with
    // strict) or as llama.cpp's grammar; the answer keeps what it was asked and is checked against it.
    void structuredOutputIsAskedOfTheServer() {
        FakeServer fake;
        fake.chat = sse("data: {\"choices\":[{\"delta\":{\"content\":\"{\\\"ok\\\": tru\"},\"finish_reason\":\"length\"}]}\n\ndata: [DONE]\n\n");
        ChatFixture f(7);
        QCOMPARE(connectTo(f, fake.url(), QString(), "fake"), QString());
        const QString schema = R"({"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]})";
        f.structured->setKind(StructuredOutput::Kind::JsonSchema);
        f.structured->setText(schema);
        QCOMPARE(f.structured->error(), QString());
        QVERIFY(f.answer(QStringLiteral("Hi")));
        QJsonObject body = QJsonDocument::fromJson(fake.lastBody).object();
        QCOMPARE(body["response_format"].toObject(),
                 (QJsonObject{{"type", "json_schema"},
                              {"json_schema", QJsonObject{{"name", "answer"}, {"strict", true}, {"schema", QJsonDocument::fromJson(schema.toUtf8()).object()}}}}));
        QVERIFY(!body.contains("grammar"));
        // The server sent JSON cut short: kept, and said to be incomplete.
        QCOMPARE(f.last().text, QStringLiteral("{\"ok\": tru"));
        QCOMPARE(f.chat->messages()->index(1).data(ChatModel::StructuredRole).toMap()["verdict"].toString(), QStringLiteral("incomplete"));

        f.structured->setKind(StructuredOutput::Kind::Json);
        QVERIFY(f.answer([&] { return f.chat->regenerate(); }));
        body = QJsonDocument::fromJson(fake.lastBody).object();
        QCOMPARE(body["response_format"].toObject(), (QJsonObject{{"type", "json_object"}}));

        f.structured->setKind(StructuredOutput::Kind::Gbnf);
        f.structured->setText(QStringLiteral("root ::= \"{\" [^}]* \"}\""));
        QCOMPARE(f.structured->error(), QString());
        QVERIFY(f.answer([&] { return f.chat->regenerate(); }));
        body = QJsonDocument::fromJson(fake.lastBody).object();
        QCOMPARE(body["grammar"].toString(), QStringLiteral("root ::= \"{\" [^}]* \"}\""));
        QVERIFY(!body.contains("response_format"));

        f.structured->setKind(StructuredOutput::Kind::Off);
        QVERIFY(f.answer([&] { return f.chat->regenerate(); }));
        body = QJsonDocument::fromJson(fake.lastBody).object();
        QVERIFY(!body.contains("grammar") && !body.contains("response_format"));
        QVERIFY(f.chat->messages()->index(1).data(ChatModel::StructuredRole).toMap().isEmpty());
    }

    // Our server follows a schema: the answer, streamed over the network, is the JSON asked for.
    void aSchemaAnswerFromOurServer() {
        ChatFixture f(48);
        QCOMPARE(connectTo(f, urlOf(*server_), QString(), "stories260K"), QString());
        f.structured->setKind(StructuredOutput::Kind::JsonSchema);
        f.structured->setText(R"({"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"], "additionalProperties": false})");
        QVERIFY(f.answer(QStringLiteral("Tell me a story about a cat.")));
        const QJsonDocument doc = QJsonDocument::fromJson(f.last().text.toUtf8());
        QVERIFY2(doc.isObject() && doc.object().keys() == QStringList{"ok"} && doc.object()["ok"].isBool(), qPrintable(f.last().text));
        const QVariantMap v = f.chat->messages()->index(1).data(ChatModel::StructuredRole).toMap();
        QCOMPARE(v["verdict"].toString(), QStringLiteral("valid"));
        QCOMPARE(f.last().origin.structured.kind, StructuredKind::JsonSchema);
    }

    // Servers that differ from ours: text without logprobs (shown, untinted), a whole answer to a
    // streamed request, an error event mid-stream (the answer so far kept, the error said).
    void otherServersAnswers() {
        FakeServer fake;
        ChatFixture f(16);
        QCOMPARE(connectTo(f, fake.url(), QString(), "fake"), QString());

        fake.chat = sse("data: {\"choices\":[{\"delta\":{\"role\":\"assistant\"}}]}\n\n"
                        "data: {\"choices\":[{\"delta\":{\"content\":\"Hello\"}}]}\n\n"
                        "data: {\"choices\":[{\"delta\":{\"content\":\" there\"},\"finish_reason\":\"stop\"}]}\n\n"
                        "data: [DONE]\n\n");
        QVERIFY(f.answer(QStringLiteral("Hi")));
        QCOMPARE(f.last().text, QStringLiteral("Hello there"));
        QCOMPARE(int(f.last().steps.size()), 2);
        QVERIFY(std::isnan(f.last().steps[0].sample.pRaw));
        QVERIFY(f.last().steps[0].sample.top.empty());
        QCOMPARE(f.last().finishReason, Message::EndOfGeneration);
        QCOMPARE(f.engine->reportedStages(), QStringList{"raw"});

        fake.chat = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n"
                    "{\"choices\":[{\"message\":{\"role\":\"assistant\",\"content\":\"Whole\"},\"logprobs\":{\"content\":["
                    "{\"token\":\"Whole\",\"logprob\":-0.5,\"top_logprobs\":[{\"token\":\"Whole\",\"logprob\":-0.5},{\"token\":\"Part\",\"logprob\":-1}]}]},"
                    "\"finish_reason\":\"length\"}]}";
        QVERIFY(f.answer(QStringLiteral("Again")));
        QCOMPARE(f.last().text, QStringLiteral("Whole"));
        QCOMPARE(int(f.last().steps.size()), 1);
        QCOMPARE(f.last().steps[0].sample.top.size(), size_t(2));
        QCOMPARE(f.last().steps[0].sample.top[1].p[0], float(std::exp(-1.0)));
        QCOMPARE(f.last().finishReason, Message::MaxTokens);

        fake.chat = sse("data: {\"choices\":[{\"delta\":{\"content\":\"Half\"},\"logprobs\":{\"content\":[{\"token\":\"Half\",\"logprob\":-0.1,\"top_logprobs\":[]}]}}]}\n\n"
                        "data: {\"error\":{\"message\":\"CUDA out of memory\",\"type\":\"server_error\"}}\n\n");
        QSignalSpy failed(f.engine.get(), &EngineController::generationFailed);
        QVERIFY(f.chat->send(QStringLiteral("Once more")));
        QVERIFY(failed.wait(20000));
        QCOMPARE(failed.first().at(1).toString(), QStringLiteral("The answer from %1 stopped after 1 token: the server reported an error: CUDA out of memory").arg(fake.url()));
        QCOMPARE(f.last().text, QStringLiteral("Half"));
        QCOMPARE(f.last().finishReason, Message::Failed);
        QCOMPARE(f.chat->lastError(), QStringLiteral("The answer from %1 stopped after 1 token: the server reported an error: CUDA out of memory").arg(fake.url()));

        // The connection closed mid-answer (a server that went away): kept, and said so.
        fake.chat = sse("data: {\"choices\":[{\"delta\":{\"content\":\"Cut\"}}]}\n\n");
        QSignalSpy cut(f.engine.get(), &EngineController::generationFailed);
        QVERIFY(f.chat->send(QStringLiteral("Go on")));
        QVERIFY(cut.wait(20000));
        QCOMPARE(cut.first().at(1).toString(),
                 QStringLiteral("The answer from %1 stopped after 1 token: the connection closed before the server said the answer was complete.").arg(fake.url()));
        QCOMPARE(f.last().text, QStringLiteral("Cut"));
        QCOMPARE(f.last().finishReason, Message::Failed);

        fake.chat = "HTTP/1.1 400 Bad Request\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n"
                    "{\"error\":{\"message\":\"top_logprobs must be at most 5\",\"type\":\"invalid_request_error\"}}";
        QSignalSpy failedAgain(f.engine.get(), &EngineController::generationFailed);
        QVERIFY(f.chat->send(QStringLiteral("And?")));
        QVERIFY(failedAgain.wait(20000));
        QCOMPARE(failedAgain.first().at(1).toString(), QStringLiteral("%1 answered 400: top_logprobs must be at most 5").arg(fake.url()));
    }

    void unreachableAndNotOpenAi() {
        ChatFixture f(4);
        const QString nowhere = QStringLiteral("http://127.0.0.1:%1").arg(closedPort());
        const QString message = connectTo(f, nowhere, QString(), "stories260K");
        QVERIFY2(message.startsWith(QStringLiteral("Could not reach %1: ").arg(nowhere)) && message.contains("nothing is listening at that address (connection refused)") &&
                     message.endsWith("Is the server running, and is the address right?"), qPrintable(message));

        // A web server that is not an OpenAI one: a page for every request.
        QTcpServer web;
        QVERIFY(web.listen(QHostAddress::LocalHost, 0));
        QObject::connect(&web, &QTcpServer::newConnection, &web, [&web] {
            QTcpSocket* s = web.nextPendingConnection();
            QObject::connect(s, &QTcpSocket::readyRead, s, [s] {
                s->readAll();
                s->write("HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 13\r\nConnection: close\r\n\r\n<html></html>");
                s->disconnectFromHost();
            });
        });
        const QString page = QStringLiteral("http://127.0.0.1:%1").arg(web.serverPort());
        QCOMPARE(connectTo(f, page, QString(), "stories260K"),
                 QStringLiteral("%1 is not an OpenAI-compatible server: GET /v1/models gave no model list").arg(page));
        QCOMPARE(connectTo(f, urlOf(*server_), QString(), "llama-70b"),
                 QStringLiteral("%1 does not serve “llama-70b” (it lists stories260K)").arg(urlOf(*server_)));
        QVERIFY(!f.engine->hasModel());
    }
};

QTEST_MAIN(TestRemoteSession)
#include "tst_remote_session.moc"
