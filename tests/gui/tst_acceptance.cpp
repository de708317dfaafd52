// Acceptance: the app as a person uses it. The real object graph (tests/gui/app_stack.h, as
// app/main.cpp builds it), Main.qml in a real window (offscreen in ctest), driven by QTest mouse
// and keyboard events on that window, one scenario per user task. Each asserts on what is on
// screen (item text, visibility, geometry inside the window) and in the conversation database.
// Every step leaves a screenshot in build/acceptance-screens/; any QML warning fails the test.
#include <QGuiApplication>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QHash>
#include <QImage>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QPointer>
#include <QQuickItem>
#include <QQuickStyle>
#include <QQuickWindow>
#include <QtQuickTest/quicktest.h>
#include <QRegularExpression>
#include <QSettings>
#include <QTemporaryDir>
#include <QTextLayout>
#include <QTest>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>

#include "app/units.h"
#include "chat/token_heatmap.h"
#include "visualizer/compare_values.h"
#include "step_gate.h"
#include "app_stack.h"
#include "fake_tool_homes.h"
#include "hub_fixture.h"
#include "gui_test_helpers.h"

#include "app/qml_modules.h"  // Q_IMPORT_QML_PLUGIN of each module

using namespace inferscope;
using namespace inferscope::testing_app;
using namespace inferscope::testing_gui;

namespace {

// The signal came, during the wait or already before it (a short answer may finish while the key
// that sent it is still being processed).
bool arrived(QSignalSpy& spy, int ms) { return !spy.isEmpty() || spy.wait(ms); }

// QML's warnings (bindings, type errors, layout loops) collected while a scenario runs.
QStringList gQmlWarnings;
QtMessageHandler gPrevious = nullptr;

void collectQmlWarnings(QtMsgType type, const QMessageLogContext& context, const QString& message) {
    const bool fromQml = QByteArray(context.category ? context.category : "").startsWith("qml") ||
                         QByteArray(context.category ? context.category : "").startsWith("js") || message.contains(QLatin1String(".qml:")) ||
                         message.contains(QLatin1String("Polish loop")) || message.contains(QLatin1String("Binding loop")) ||
                         // Asked by QML for a position past a text's end (the selected token's outline).
                         message.startsWith(QLatin1String("QTextCursor::"));
    if (type != QtDebugMsg && type != QtInfoMsg && fromQml) gQmlWarnings << message;
    if (gPrevious) gPrevious(type, context, message);
}

}  // namespace

class TestAcceptance : public QObject {
    Q_OBJECT

    QTemporaryDir dir_;
    std::unique_ptr<AppStack> app_;
    int shotNumber_ = 0;

    QQuickWindow* window() const { return app_->window(); }

    // The app with its window at w×h, the welcome already seen, answers greedy and short.
    bool start(int w, int h) {
        app_ = std::make_unique<AppStack>(dir_.filePath(QStringLiteral("conversations.db")));
        app_->settings->setSessionWelcomeSeen(true);
        app_->sampling->setMaxTokens(16);
        SamplerParams greedy;
        greedy.temperature = 0.0f;
        app_->chat->setSamplerOverride(greedy);
        if (!app_->showWindow()) return false;
        window()->resize(w, h);
        window()->show();
        window()->requestActivate();
        return QTest::qWaitForWindowExposed(window()) && QTest::qWaitForWindowActive(window());
    }
    bool loadModel() { return loadAndWait(*app_->engine, bundledModel()); }

    void shot(const QString& step) {
        // Posted events (layout, deferred bindings) delivered and one more frame rendered.
        QCoreApplication::sendPostedEvents();
        QSignalSpy rendered(window(), &QQuickWindow::frameSwapped);
        window()->update();
        rendered.wait(2000);  // a picture for a person, not a check: taken even if no frame came
        const QString folder = QStringLiteral(INFERSCOPE_ACCEPTANCE_SCREENS);
        QDir().mkpath(folder);
        const QString name = QStringLiteral("%1-%2-%3.png")
                                 .arg(++shotNumber_, 2, 10, QLatin1Char('0'))
                                 .arg(QString::fromLatin1(QTest::currentTestFunction()), step);
        window()->grabWindow().save(QDir(folder).filePath(name));
    }

    QQuickItem* item(const QString& objectName) const { return app_->find<QQuickItem>(objectName); }
    // Every visible item of the visual tree (popups included) whose objectName or text matches.
    QList<QQuickItem*> visibleItems(const std::function<bool(QQuickItem*)>& match) const {
        QList<QQuickItem*> found;
        std::function<void(QQuickItem*)> walk = [&](QQuickItem* i) {
            if (!i->isVisible()) return;
            if (match(i)) found << i;
            for (QQuickItem* c : i->childItems()) walk(c);
        };
        walk(window()->contentItem());
        return found;
    }
    QQuickItem* visibleNamed(const QString& objectName) const {
        const auto all = visibleItems([&](QQuickItem* i) { return i->objectName() == objectName; });
        return all.isEmpty() ? nullptr : all.last();
    }
    // The last visible item showing `text`; with `within`, only among that item's descendants.
    QQuickItem* visibleWithText(const QString& text, QQuickItem* within = nullptr) const {
        const auto all = visibleItems([&](QQuickItem* i) {
            if (i->property("text").toString() != text) return false;
            for (QQuickItem* p = i; p; p = p->parentItem())
                if (!within || p == within) return true;
            return false;
        });
        return all.isEmpty() ? nullptr : all.last();
    }
    // The same, waited for (at most 5 s): a row or button that appears once the window has caught up
    // (the conversation list after a save, a menu's entries) — nullptr if it never does.
    QQuickItem* waitNamed(const QString& objectName) const {
        QQuickItem* found = nullptr;
        (void)QTest::qWaitFor([&] { return (found = visibleNamed(objectName)) != nullptr; }, 5000);  // null when it never came: the caller says so
        return found;
    }
    QQuickItem* waitText(const QString& text) const {
        QQuickItem* found = nullptr;
        (void)QTest::qWaitFor([&] { return (found = visibleWithText(text)) != nullptr; }, 5000);
        return found;
    }
    // The popup (dialog, menu) an item is shown in: its ancestor that sits on the window's overlay.
    static QQuickItem* popupOf(QQuickItem* i) {
        for (; i && i->parentItem(); i = i->parentItem())
            if (i->parentItem()->inherits("QQuickOverlay")) return i;
        return nullptr;
    }
    // A conversation's row in the sidebar, by its title.
    QQuickItem* sidebarRow(const QString& title) const {
        QQuickItem* list = item(QStringLiteral("conversationList"));
        if (!list) return nullptr;
        const auto all = visibleItems([&](QQuickItem* i) {
            if (i->property("text").toString() != title) return false;
            for (QQuickItem* p = i->parentItem(); p; p = p->parentItem())
                if (p == list) return true;
            return false;
        });
        return all.isEmpty() ? nullptr : all.first();
    }
    // The item lies wholly inside the window (not cut off by its edges).
    bool insideWindow(QQuickItem* i) const {
        const QRectF r = i->mapRectToScene(QRectF(0, 0, i->width(), i->height()));
        return r.width() > 0 && r.height() > 0 && r.left() >= -0.5 && r.top() >= -0.5 && r.right() <= window()->width() + 0.5 &&
               r.bottom() <= window()->height() + 0.5;
    }
    // The window's layouts are polished and `i` stayed where it is for two polls in a row: a click
    // computed from its geometry lands on it (a popup still being laid out or re-centred moves its
    // rows, and a press outside a popup closes it).
    bool settled(QQuickItem* i) const {
        QPointer<QQuickItem> item(i);
        QRectF last;
        return QTest::qWaitFor([&] {
            if (!item || QQuickTest::qIsPolishScheduled(window())) return false;
            const QRectF r = item->mapRectToScene(QRectF(0, 0, item->width(), item->height()));
            const bool same = r == last;
            last = r;
            return same;
        }, 5000) && item;
    }
    void click(QQuickItem* i) {
        QVERIFY(i);
        const QString name = i->objectName();  // for the messages: the item may be gone by then
        QPointer<QQuickItem> alive(i);
        QVERIFY2(settled(i), qPrintable(QStringLiteral("'%1' did not settle%2").arg(name, alive ? QString() : QStringLiteral(" (it was deleted)"))));
        QVERIFY2(insideWindow(i), qPrintable(name));
        QTest::mouseClick(window(), Qt::LeftButton, {}, i->mapToScene(QPointF(i->width() / 2, i->height() / 2)).toPoint());
    }
    // Loads modelA, has it answer "Once upon a time" (40 tokens), and picks modelB in the
    // Probabilities panel's "Compare with…" menu (modelB put in the recent models first); `flick`:
    // the panel's Flickable, to scroll the result into view. The caller checks currentTestFailed().
    void compareFromRecentModels(const QString& modelA, const QString& modelB, QQuickItem*& flick) {
        QVERIFY(start(1400, 900));
        app_->sampling->setMaxTokens(40);
        app_->settings->noteModelLoaded(modelB);  // used before: in the recent list
        QVERIFY(loadAndWait(*app_->engine, modelA));
        QVERIFY(sendByKeyboard(QStringLiteral("Once upon a time")));
        app_->settings->setInspectorTab(QStringLiteral("probabilities"));
        QQuickItem* choose = nullptr;
        QTRY_VERIFY((choose = visibleNamed(QStringLiteral("compareChoose"))));
        QQuickItem* panel = choose;
        while (panel && !panel->inherits("QQuickScrollView")) panel = panel->parentItem();
        QVERIFY(panel);
        flick = panel->property("contentItem").value<QQuickItem*>();
        QVERIFY(settled(choose));
        const QPointF inContent = choose->mapToItem(flick->property("contentItem").value<QQuickItem*>(), QPointF(0, 0));
        flick->setProperty("contentY", std::max(0.0, inContent.y() - 200));
        QTRY_VERIFY(insideWindow(choose));
        QTRY_VERIFY(choose->property("enabled").toBool());
        click(choose);
        click(waitText(QFileInfo(modelB).fileName()));
    }
    // Clicks what `find` returns once it has settled; found again if a view made it anew meanwhile
    // (the file dialog's list is refilled by a thread of its own while it opens).
    void clickFound(const std::function<QQuickItem*()>& find) {
        QPointer<QQuickItem> target;
        QVERIFY(QTest::qWaitFor([&] {
            target = find();
            return target && settled(target) && target && insideWindow(target);
        }, 10000));
        // No event is handled between the check and the click: the item is the one checked.
        QTest::mouseClick(window(), Qt::LeftButton, {}, target->mapToScene(QPointF(target->width() / 2, target->height() / 2)).toPoint());
    }
    // Key by key, as typed (QTest::keyClicks takes widgets only).
    void typeText(const QString& text) {
        for (const QChar c : text) QTest::keyClick(window(), c.toLatin1());
    }
    // Clicks token `step` of the last answer (row 1) in its text, as a person would; waits until
    // the inspector shows it.
    void clickAnswerToken(int step) {
        const auto texts = visibleItems([](QQuickItem* i) { return i->objectName() == QLatin1String("messageText"); });
        QVERIFY(!texts.isEmpty());
        QQuickItem* body = texts.last();
        QVERIFY(settled(body));
        const QList<int> starts = app_->chat->messages()->heatText(1)->tokenStarts;
        QVERIFY(starts.size() > step + 1);
        // The text is written a paced moment after the steps arrive: a token past its end yet
        // has no rectangle (Qt warns, and the click would land nowhere).
        QTRY_VERIFY(body->property("length").toInt() >= starts[step + 1]);
        QRectF r;
        QMetaObject::invokeMethod(body, "positionToRectangle", Q_RETURN_ARG(QRectF, r), Q_ARG(int, starts[step]));
        const QPoint scene = body->mapToScene(QPointF(r.x() + 2, r.y() + r.height() / 2)).toPoint();
        QTest::mouseClick(window(), Qt::LeftButton, {}, scene);
        QTRY_COMPARE(app_->inspector->step(), step);
    }
    // Types a message into the composer and presses Enter; waits for the answer to finish.
    bool sendByKeyboard(const QString& text) {
        QQuickItem* input = item(QStringLiteral("composerInput"));
        if (!input) return false;
        input->forceActiveFocus();
        QSignalSpy done(app_->chat.get(), &ChatController::answerFinished);
        typeText(text);
        const QString typed = input->property("text").toString();
        QTest::keyClick(window(), Qt::Key_Return);
        if (arrived(done, 20000)) return true;
        std::fprintf(stderr, "not sent: typed \"%s\", composer \"%s\", messages %d, focus %d, error \"%s\", canSend %d\n",
                     qPrintable(typed), qPrintable(input->property("text").toString()), app_->chat->messages()->count(), int(input->hasActiveFocus()),
                     qPrintable(app_->chat->lastError()), int(app_->chat->canSend()));
        return false;
    }
    // The Probabilities panel's most probable candidate that was not picked, once the window's
    // layouts are polished (nullptr before): the panel is laid out again as the step's figures
    // arrive, and a click at where a bar was before that landed on another button. Wait for it
    // with QTRY_VERIFY((other = unpickedCandidate())).
    QQuickItem* unpickedCandidate() const {
        if (QQuickTest::qIsPolishScheduled(window())) return nullptr;
        for (int c = 0; c < 5; ++c)
            if (QQuickItem* bar = visibleNamed(QStringLiteral("candidate_%1").arg(c)); bar && bar->isEnabled()) return bar;
        return nullptr;
    }
    // The last message as the reader sees it (its heat map is rich text: the characters only).
    QString lastMessageText() const {
        const auto texts = visibleItems([](QQuickItem* i) { return i->objectName() == QLatin1String("messageText"); });
        if (texts.isEmpty()) return {};
        QString plain;
        QMetaObject::invokeMethod(texts.last(), "getText", Q_RETURN_ARG(QString, plain), Q_ARG(int, 0),
                                  Q_ARG(int, texts.last()->property("length").toInt()));
        return plain;
    }

private slots:
    void initTestCase() {
        useTestLocations();
        QVERIFY(dir_.isValid());
        QQuickStyle::setStyle(QStringLiteral("Fusion"));
        gPrevious = qInstallMessageHandler(collectQmlWarnings);
    }
    void init() {
        gQmlWarnings.clear();
        shotNumber_ = 0;
    }
    void cleanup() {
        app_.reset();
        removeFilesIn(dir_.path());
        QVERIFY2(gQmlWarnings.isEmpty(), qPrintable(gQmlWarnings.join(QLatin1Char('\n'))));
    }

    // Ctrl+O opens the file dialog (it crashed on Qt 6.4 without Qt.labs.folderlistmodel); the
    // chosen model loads and its name shows in the title and the top bar.
    void openAModelThroughTheDialog() {
        QVERIFY(start(1400, 900));
        QCOMPARE(app_->settings->fileDialogProblem(), QString());
        shot(QStringLiteral("start"));
        QObject* dialog = window()->findChild<QObject*>(QStringLiteral("modelDialog"));
        QVERIFY(dialog);
        // The folder the user would have browsed to: the bundled model's.
        dialog->setProperty("currentFolder", QUrl::fromLocalFile(QFileInfo(bundledModel()).absolutePath()));
        window()->requestActivate();
        QTest::keyClick(window(), Qt::Key_O, Qt::ControlModifier);
        QTRY_VERIFY(dialog->property("visible").toBool());
        // The dialog's own rows and buttons (the popup item that holds its file list), not a text
        // that happens to match elsewhere in the window.
        QQuickItem* popup = nullptr;
        QTRY_VERIFY((popup = popupOf(visibleNamed(QStringLiteral("fileDialogListView")))));
        QTRY_VERIFY(visibleWithText(QStringLiteral("stories260K.gguf"), popup));
        shot(QStringLiteral("dialog"));
        QSignalSpy loaded(app_->engine.get(), &EngineController::modelChanged);
        clickFound([&] { return visibleWithText(QStringLiteral("stories260K.gguf"), popup); });
        QVERIFY2(dialog->property("visible").toBool(), "the click on the file closed the dialog (it landed outside it?)");
        QQuickItem* open = nullptr;
        QTRY_VERIFY((open = visibleWithText(QStringLiteral("Open"), popup)) && open->isEnabled());
        click(open);
        QVERIFY(arrived(loaded, 10000));
        QCOMPARE(app_->engine->modelName(), QStringLiteral("stories260K"));
        QCOMPARE(window()->title(), QStringLiteral("stories260K"));  // the platform adds " — Inferscope"
        QVERIFY(visibleWithText(QStringLiteral("stories260K")) || item(QStringLiteral("modelButton"))->property("text").toString().contains("stories260K"));
        shot(QStringLiteral("loaded"));
    }

    // Ctrl+L: the models Ollama and LM Studio hold, named as they name them, with the fit; Open
    // loads Ollama's blob where it lies, and the chat answers with it.
    void theLibraryOpensWhatOllamaHas() {
        QVERIFY(start(1400, 900));
        FakeHome home;
        app_->library->setEnvironment(home.env);
        window()->requestActivate();
        QTest::keyClick(window(), Qt::Key_L, Qt::ControlModifier);
        QObject* dialog = window()->findChild<QObject*>(QStringLiteral("libraryDialog"));
        QVERIFY(dialog);
        QTRY_VERIFY(dialog->property("visible").toBool());
        QTRY_VERIFY_WITH_TIMEOUT(visibleWithText(QStringLiteral("stories:260k")), 20000);
        QVERIFY(visibleWithText(QStringLiteral("lmstudio-community/stories260K-GGUF/stories260K-F32.gguf")));
        QVERIFY(visibleWithText(QStringLiteral("2 models: 1 from Ollama, 1 from LM Studio")));
        // Ollama's row (the first): its facts and fit.
        QQuickItem* ollamaRow = visibleNamed(QStringLiteral("libraryRow0"));
        QVERIFY(ollamaRow);
        auto inRow = [&](const QString& name) {
            const auto all = visibleItems([&](QQuickItem* i) { return i->objectName() == name && ollamaRow->isAncestorOf(i); });
            return all.isEmpty() ? nullptr : all.first();
        };
        QQuickItem* facts = inRow(QStringLiteral("libraryFacts"));
        QVERIFY(facts);
        QCOMPARE(facts->property("text").toString(), QStringLiteral("llama · 293K parameters · F32 · 1.13 MiB · trained context 2,048"));
        QQuickItem* fit = inRow(QStringLiteral("libraryFit"));
        QVERIFY(fit);
        QVERIFY2(fit->property("text").toString().startsWith(QStringLiteral("fits: ")), qPrintable(fit->property("text").toString()));
        QTRY_VERIFY(dialog->property("opened").toBool());  // its opening transition over
        shot(QStringLiteral("library"));
        // The selected row offers its context: the slider's left end is 512 tokens, and the fit says so.
        QQuickItem* slider = nullptr;
        QTRY_VERIFY((slider = inRow(QStringLiteral("libraryContext"))));
        QTest::mouseClick(window(), Qt::LeftButton, {}, slider->mapToScene(QPointF(2, slider->height() / 2)).toPoint());
        QTRY_VERIFY2(fit->property("text").toString().endsWith(QStringLiteral(" with 512 tokens of context")), qPrintable(fit->property("text").toString()));
        shot(QStringLiteral("library-context"));
        QSignalSpy loaded(app_->engine.get(), &EngineController::modelChanged);
        click(visibleNamed(QStringLiteral("libraryOpen0")));  // Ollama's come first
        QVERIFY(arrived(loaded, 10000));
        QCOMPARE(app_->engine->modelPath(), home.ollamaBlob);
        QCOMPARE(app_->engine->contextLength(), 512);
        QCOMPARE(app_->library->rememberedContext(home.ollamaBlob), 512);  // the next time, and from the model menu
        QTRY_VERIFY(!dialog->property("visible").toBool());
        QVERIFY(sendByKeyboard(QStringLiteral("Once upon a time")));
        QVERIFY2(lastMessageText().contains(QStringLiteral("there was a little girl")), qPrintable(lastMessageText()));
    }

    // The hub tab: search, a repository's file with its fit, a download cut at 40% that resumes
    // and is verified; the first tab lists it among our downloads; Open, and it answers.
    // The hub tab: a search, a file with its fit, a download stopped by the person; the app closed
    // and started again: the row says what is kept, Resume goes on from it through a cut
    // connection, the file is verified, and the same row opens it for a chat.
    void downloadStopRestartResumeThenChat() {
        testing_hub::HubFixture fixture;
        QFile model(bundledModel());
        QVERIFY(model.open(QIODevice::ReadOnly));
        const QByteArray bytes = model.readAll();
        fixture.addFile("karpathy/stories-GGUF", "stories260K.gguf", bytes.toStdString());
        QTemporaryDir home;  // one home for both runs: the models folder survives the restart
        catalog::Environment env;
        env.home = home.path().toStdString();
        env.systemOllamaModels = env.home + "/system-ollama";
        catalog::HubOptions options;
        options.endpoint = fixture.endpoint();
        options.stallTimeoutSeconds = 60;  // a stall lasts until Stop
        options.sleep = [](int) {};
        const QString destination = QString::fromStdString(
            catalog::downloadDestination(catalog::inferscopeModelsFolder(env), "karpathy/stories-GGUF", "stories260K.gguf").string());
        const QString part = QString::fromStdString(catalog::partialFileOf(destination.toStdString()).string());
        auto openHubTab = [&] {
            app_->library->setEnvironment(env);
            app_->downloads->setHubOptions(options);
            window()->requestActivate();
            QTest::keyClick(window(), Qt::Key_L, Qt::ControlModifier);
            QObject* dialog = window()->findChild<QObject*>(QStringLiteral("libraryDialog"));
            if (!dialog || !QTest::qWaitFor([&] { return dialog->property("opened").toBool(); }, 5000)) return (QObject*)nullptr;
            click(waitNamed(QStringLiteral("hubTab")));
            return dialog;
        };

        QVERIFY(start(1400, 900));
        QVERIFY(openHubTab());
        // Before a search: a few small instruct models, each with its licence.
        QVERIFY(waitText(QStringLiteral("Qwen/Qwen2.5-0.5B-Instruct-GGUF\nQwen 2.5, 0.5B · Apache 2.0")));
        shot(QStringLiteral("hub-start"));
        click(waitNamed(QStringLiteral("hubSearch")));
        typeText(QStringLiteral("stories"));
        QTest::keyClick(window(), Qt::Key_Return);
        QTRY_VERIFY_WITH_TIMEOUT(visibleWithText(QStringLiteral("karpathy/stories-GGUF")), 20000);
        click(visibleWithText(QStringLiteral("karpathy/stories-GGUF")));
        QQuickItem* fit = nullptr;
        QTRY_VERIFY_WITH_TIMEOUT((fit = visibleNamed(QStringLiteral("hubFileFit"))) && fit->property("text").toString().contains(QStringLiteral("fits: ")), 20000);
        QCOMPARE(fit->property("text").toString().left(25), QStringLiteral("1.13 MiB · llama F32 · fi"));
        QCOMPARE(visibleNamed(QStringLiteral("hubDownload0"))->property("text").toString(), QStringLiteral("Download"));
        shot(QStringLiteral("hub"));
        fixture.stallNext = true;  // a tenth arrives, then nothing
        // The file list is made anew when the library's scan ends: the button found again if so.
        const auto downloadButton = [&] { return visibleNamed(QStringLiteral("hubDownload0")); };
        clickFound(downloadButton);
        QTRY_VERIFY_WITH_TIMEOUT(QFileInfo(part).size() > 0, 20000);
        click(waitNamed(QStringLiteral("hubCancel")));
        QVERIFY(waitText(QStringLiteral("Stopped; the part downloaded is kept and the next download of this file resumes from it.")));
        const qint64 kept = QFileInfo(part).size();

        // Closed and started again.
        app_->close();
        app_.reset();
        QVERIFY(start(1400, 900));
        QVERIFY(openHubTab());
        click(waitNamed(QStringLiteral("hubSearch")));
        typeText(QStringLiteral("stories"));
        QTest::keyClick(window(), Qt::Key_Return);
        QTRY_VERIFY_WITH_TIMEOUT(visibleWithText(QStringLiteral("karpathy/stories-GGUF")), 20000);
        click(visibleWithText(QStringLiteral("karpathy/stories-GGUF")));
        const QString keptText = QStringLiteral("%1 of 1.13 MiB downloaded before: the download goes on from there").arg(binaryBytes(uint64_t(kept)));
        QTRY_VERIFY_WITH_TIMEOUT(visibleNamed(QStringLiteral("hubFileLocal")), 20000);
        QCOMPARE(visibleNamed(QStringLiteral("hubFileLocal"))->property("text").toString(), keptText);
        QCOMPARE(downloadButton()->property("text").toString(), QStringLiteral("Resume"));
        shot(QStringLiteral("resume"));
        fixture.clearRequests();
        fixture.cutAtPercent = 40;  // and the connection is cut once on the way
        clickFound(downloadButton);
        QTRY_VERIFY_WITH_TIMEOUT(visibleWithText(QStringLiteral("Downloaded and verified: ") + destination), 30000);
        QString firstRange;
        for (const auto& r : fixture.requests())
            if (r.listener == "cdn" && firstRange.isEmpty()) firstRange = QString::fromStdString(r.range);
        QCOMPARE(firstRange, QStringLiteral("bytes=%1-").arg(kept));
        QFile got(destination);
        QVERIFY(got.open(QIODevice::ReadOnly));
        QVERIFY(got.readAll() == bytes);
        QTRY_COMPARE(visibleNamed(QStringLiteral("hubFileLocal"))->property("text").toString(), QStringLiteral("Downloaded: in your models folder"));
        QCOMPARE(downloadButton()->property("text").toString(), QStringLiteral("Open"));
        shot(QStringLiteral("downloaded"));

        QSignalSpy loaded(app_->engine.get(), &EngineController::modelChanged);
        clickFound(downloadButton);
        QVERIFY(arrived(loaded, 10000));
        QCOMPARE(app_->engine->modelPath(), destination);
        QVERIFY(sendByKeyboard(QStringLiteral("Once upon a time")));
        QVERIFY2(lastMessageText().contains(QStringLiteral("there was a little girl")), qPrintable(lastMessageText()));
        // The library lists it among our downloads.
        QTRY_VERIFY_WITH_TIMEOUT(app_->library->count() == 1 && !app_->library->scanning(), 20000);
        QCOMPARE(app_->library->data(app_->library->index(0), ModelLibrary::SourceRole).toString(), QStringLiteral("Inferscope downloads"));
    }

    // Settings → Structured output: GBNF chosen in the box, a grammar typed with a mistake (said
    // under it, and Send refuses), then corrected; the answer is what the grammar allows.
    void structuredOutputInTheWindow() {
        QVERIFY(start(1400, 900));
        QVERIFY(loadModel());
        app_->settings->setInspectorTab(QStringLiteral("settings"));
        click(waitNamed(QStringLiteral("structuredKind")));
        clickFound([&] { return visibleWithText(QStringLiteral("Text a GBNF grammar accepts")); });
        QTRY_COMPARE(app_->structured->kind(), StructuredOutput::Kind::Gbnf);
        QQuickItem* text = waitNamed(QStringLiteral("structuredText"));
        QVERIFY(text);
        click(text);
        QTest::keyClick(window(), Qt::Key_A, Qt::ControlModifier);
        typeText(QStringLiteral("root ::= answer"));
        QQuickItem* error = nullptr;
        QTRY_VERIFY((error = visibleNamed(QStringLiteral("structuredError"))));
        QCOMPARE(error->property("text").toString(), app_->structured->error());
        QVERIFY2(app_->structured->error().contains(QStringLiteral("answer")), qPrintable(app_->structured->error()));
        shot(QStringLiteral("grammar-error"));
        QTest::keyClick(window(), Qt::Key_A, Qt::ControlModifier);
        typeText(QStringLiteral("root ::= (\"yes\" | \"no\") \".\""));
        QTRY_VERIFY(!visibleNamed(QStringLiteral("structuredError")));
        QVERIFY(sendByKeyboard(QStringLiteral("Once upon a time")));
        QVERIFY2(lastMessageText() == QLatin1String("yes.") || lastMessageText() == QLatin1String("no."), qPrintable(lastMessageText()));
        // The first token's step: what the grammar removed, from the step's own record.
        app_->settings->setInspectorTab(QStringLiteral("probabilities"));
        app_->inspector->select(1, 0);
        QQuickItem* note = nullptr;
        QTRY_VERIFY((note = visibleNamed(QStringLiteral("grammarNote"))));
        const SampleRecord& first = app_->chat->messages()->at(1).steps.front().sample;
        QVERIFY(first.constrained);
        QVERIFY2(note->property("text").toString().startsWith(
                     QStringLiteral("Grammar: removed %1% of the probability").arg(double(first.grammarMassRemoved) * 100, 0, 'f', 1)),
                 qPrintable(note->property("text").toString()));
        // Under the answer: checked against the grammar it was asked to follow.
        QTRY_VERIFY(visibleNamed(QStringLiteral("structuredVerdict")));
        QCOMPARE(visibleNamed(QStringLiteral("structuredVerdict"))->property("text").toString(), QStringLiteral("✓ Matches the grammar it was asked to follow"));
        QVERIFY(!visibleNamed(QStringLiteral("formattedJsonToggle")));  // not JSON: nothing to format
        shot(QStringLiteral("grammar-answer"));
    }

    // Settings → Speculative decoding → prompt lookup, a repetitive prompt, the tint "drafts": the
    // legend names the fates, the footer counts the drafts, and the Probabilities panel says what
    // became of an accepted token's draft.
    void speculativeAnswerInTheWindow() {
        QSettings().remove(QStringLiteral("speculative"));
        QVERIFY(start(1400, 900));
        QVERIFY(loadModel());
        app_->sampling->setMaxTokens(40);
        app_->settings->setInspectorTab(QStringLiteral("settings"));
        click(waitNamed(QStringLiteral("speculativeMode")));
        clickFound([&] { return visibleWithText(QStringLiteral("Prompt lookup (n-gram drafts)")); });
        QTRY_COMPARE(app_->speculative->mode(), SpeculativeSettings::Mode::PromptLookup);
        QSignalSpy done(app_->chat.get(), &ChatController::answerFinished);
        QVERIFY(app_->chat->send(QStringLiteral("Once upon a time, there was a little girl named Lily. She liked to play in the park. "
                                                "Once upon a time, there was a little girl named Lily. She liked to play")));
        QVERIFY(arrived(done, 30000));
        const ChatMessage& answer = app_->chat->messages()->at(1);
        int accepted = -1;
        for (size_t i = 0; i < answer.steps.size() && accepted < 0; ++i)
            if (answer.steps[i].draft && answer.steps[i].draft->fate == DraftRecord::Fate::Accepted) accepted = int(i);
        QVERIFY2(accepted >= 0, "no accepted draft");
        app_->settings->setHeatMode(QStringLiteral("draft"));
        QTRY_VERIFY(visibleNamed(QStringLiteral("draftLegend")));
        QVERIFY(visibleWithText(QStringLiteral("draft accepted")));
        // The footer: "… · speculative: N drafted, M accepted (R%), K rounds".
        const QString totals = app_->chat->messages()->data(app_->chat->messages()->index(1), ChatModel::DraftsRole).toString();
        QVERIFY2(totals.startsWith(QStringLiteral("speculative: ")), qPrintable(totals));
        QTRY_VERIFY(!visibleItems([&](QQuickItem* i) { return i->property("text").toString().endsWith(totals); }).isEmpty());
        app_->settings->setInspectorTab(QStringLiteral("probabilities"));
        app_->inspector->select(1, accepted);
        QQuickItem* note = nullptr;
        QTRY_VERIFY((note = visibleNamed(QStringLiteral("draftNote"))));
        QTRY_VERIFY2(note->property("text").toString().startsWith(QStringLiteral("Speculative: drafted ")), qPrintable(note->property("text").toString()));
        QVERIFY2(note->property("text").toString().contains(QStringLiteral(": accepted with probability 1.00")), qPrintable(note->property("text").toString()));
        shot(QStringLiteral("speculative"));
        QSettings().remove(QStringLiteral("speculative"));
    }

    // A rejected draft in the window (sampled, prompt lookup): the drafter's q beside the model's p,
    // the rule with the record's figures and the residual the replacement came from; then the
    // Timeline's rounds and acceptance by position, and the speed-up once plain decoding is measured.
    void rejectedDraftAndItsTimelineInTheWindow() {
        QSettings().remove(QStringLiteral("speculative"));
        QVERIFY(start(1400, 900));
        QVERIFY(loadModel());
        SamplerParams sampled;
        sampled.temperature = 1.0f;
        sampled.seed = 7;
        app_->chat->setSamplerOverride(sampled);
        app_->sampling->setMaxTokens(40);
        app_->speculative->setMode(SpeculativeSettings::Mode::PromptLookup);
        app_->speculative->setMaxDraft(4);
        QSignalSpy done(app_->chat.get(), &ChatController::answerFinished);
        QVERIFY(app_->chat->send(QStringLiteral("Once upon a time, there was a little girl named Lily. She liked to play in the park. "
                                                "Once upon a time, there was a little girl named Lily. She liked to play")));
        QVERIFY(arrived(done, 30000));
        const ChatMessage& answer = app_->chat->messages()->at(1);
        int rejected = -1;
        for (size_t i = 0; i < answer.steps.size() && rejected < 0; ++i)
            if (answer.steps[i].draft && answer.steps[i].draft->fate == DraftRecord::Fate::Corrected) rejected = int(i);
        QVERIFY2(rejected > 0, "no rejected draft");
        const DraftRecord& d = *answer.steps[size_t(rejected)].draft;
        app_->settings->setInspectorTab(QStringLiteral("probabilities"));
        app_->inspector->setFollowing(false);
        app_->inspector->select(1, rejected);
        QQuickItem* rule = nullptr;
        QTRY_VERIFY((rule = visibleNamed(QStringLiteral("draftRule"))));
        const QString p = QString::number(double(d.p), 'f', 2);
        QTRY_COMPARE(rule->property("text").toString(),
                     QStringLiteral("Kept with probability min(1, p/q) = min(1, %1 / 1.00) = %1: rejected.").arg(p));
        QQuickItem* residual = visibleNamed(QStringLiteral("draftResidualNote"));
        QVERIFY(residual);
        QCOMPARE(residual->property("text").toString(),
                 QStringLiteral("The replacement was drawn from what the model wanted more than the drafter did, normalize(max(0, p − q)): "
                                "%1% of the model's probability, rescaled to 100%. Its leading tokens:")
                     .arg(QString::number(double(d.residualMass) * 100, 'f', 1)));
        QVERIFY(visibleWithText(QStringLiteral("drafted, rejected")));
        QVERIFY(visibleNamed(QStringLiteral("draftCandidate_0")));
        QVERIFY(visibleNamed(QStringLiteral("draftResidual_0")));
        shot(QStringLiteral("rejected"));
        app_->settings->setInspectorTab(QStringLiteral("timeline"));
        QQuickItem* rounds = nullptr;
        QTRY_VERIFY((rounds = visibleNamed(QStringLiteral("draftRoundsText"))));
        QTRY_COMPARE(rounds->property("text").toString(), app_->timeline->speculative().value("roundsText").toString());
        const QVariantMap first = app_->timeline->speculative().value("byPosition").toList().value(0).toMap();
        QQuickItem* position = visibleNamed(QStringLiteral("draftPosition_1"));
        QVERIFY(position);
        QCOMPARE(position->property("text").toString(), QStringLiteral("1: %1/%2").arg(first.value("accepted").toInt()).arg(first.value("drafted").toInt()));
        QQuickItem* speedup = visibleNamed(QStringLiteral("draftSpeedup"));
        QVERIFY(speedup);
        QVERIFY2(speedup->property("text").toString().endsWith(QStringLiteral("Plain decoding on this model: not measured yet.")),
                 qPrintable(speedup->property("text").toString()));
        QVERIFY(app_->timeline->runWithoutDrafts());
        QTRY_VERIFY_WITH_TIMEOUT(speedup->property("text").toString().startsWith(QStringLiteral("Speed-up ")), 30000);
        QVERIFY2(speedup->property("text").toString().endsWith(QStringLiteral("(the same prompt decoded for %1 tokens without drafts, just now).")
                                                                    .arg(answer.steps.size())),
                 qPrintable(speedup->property("text").toString()));
        shot(QStringLiteral("timeline"));
        QSettings().remove(QStringLiteral("speculative"));
    }

    // Send with Enter, stop with Esc, regenerate with Ctrl+R: the answers show, the versions
    // label says 2 / 2, and the database holds both versions.
    void sendStopAndRegenerate() {
        QVERIFY(start(1400, 900));
        QVERIFY(loadModel());
        QVERIFY(sendByKeyboard(QStringLiteral("Once upon a time")));
        shot(QStringLiteral("answered"));
        const ChatModel* m = app_->chat->messages();
        QCOMPARE(m->count(), 2);
        QVERIFY2(lastMessageText().contains(QStringLiteral("there was a little girl")), qPrintable(lastMessageText()));

        // A long answer, stopped with Esc.
        app_->sampling->setMaxTokens(400);
        QQuickItem* input = item(QStringLiteral("composerInput"));
        input->forceActiveFocus();
        QSignalSpy done(app_->chat.get(), &ChatController::answerFinished);
        StepGate gate(*app_->engine, 5);  // still streaming when Esc is pressed, however fast the machine
        typeText(QStringLiteral(" The end."));
        QTest::keyClick(window(), Qt::Key_Return);
        QVERIFY(gate.waitHeld());
        QVERIFY(app_->chat->generating());
        QTest::keyClick(window(), Qt::Key_Escape);
        QVERIFY(arrived(done, 20000));
        gate.release();
        QCOMPARE(m->at(3).finishReason, Message::Cancelled);
        shot(QStringLiteral("stopped"));
        QTRY_VERIFY(!visibleItems([](QQuickItem* i) { return i->property("text").toString().endsWith(QStringLiteral("· stopped")); }).isEmpty());

        app_->sampling->setMaxTokens(16);
        QSignalSpy again(app_->chat.get(), &ChatController::answerFinished);
        QTest::keyClick(window(), Qt::Key_R, Qt::ControlModifier);
        QVERIFY(arrived(again, 20000));
        QQuickItem* versions = visibleNamed(QStringLiteral("variantLabel"));
        QVERIFY(versions);
        QCOMPARE(versions->property("text").toString(), QStringLiteral("2 / 2"));
        const auto stored = app_->store.messages(app_->chat->conversationId());
        QCOMPARE(stored.size(), 4);
        QCOMPARE(stored[3].versionCount, 2);
        shot(QStringLiteral("regenerated"));
    }

    // An answer regenerated: a word only its first version had is found by the sidebar's search
    // (the hit says which version), and the hit opens the conversation with that version shown.
    void searchFindsAnEarlierVersionAndShowsIt() {
        QVERIFY(start(1400, 900));
        QVERIFY(loadModel());
        QVERIFY(sendByKeyboard(QStringLiteral("Once upon a time")));
        const QString first = lastMessageText();
        SamplerParams sampled;  // the second version drawn at temperature 1 with a fixed seed
        sampled.temperature = 1.0f;
        sampled.topK = 0;
        sampled.topP = 1.0f;
        sampled.minP = 0.0f;
        sampled.seed = 7;
        app_->chat->setSamplerOverride(sampled);
        QSignalSpy again(app_->chat.get(), &ChatController::answerFinished);
        QTest::keyClick(window(), Qt::Key_R, Qt::ControlModifier);
        QVERIFY(arrived(again, 20000));
        QTRY_COMPARE(visibleNamed(QStringLiteral("variantLabel"))->property("text").toString(), QStringLiteral("2 / 2"));
        const QString second = lastMessageText();
        // A word of the first version that the second does not have (the search matches word prefixes).
        QString word;
        const QStringList secondWords = second.toLower().split(QRegularExpression(QStringLiteral("\\W+")), Qt::SkipEmptyParts);
        for (const QString& w : first.toLower().split(QRegularExpression(QStringLiteral("\\W+")), Qt::SkipEmptyParts))
            if (w.size() >= 4 && std::none_of(secondWords.begin(), secondWords.end(), [&](const QString& s) { return s.startsWith(w); })) {
                word = w;
                break;
            }
        QVERIFY2(!word.isEmpty(), qPrintable(first + QStringLiteral(" | ") + second));
        const qint64 conversation = app_->chat->conversationId();

        QTest::keyClick(window(), Qt::Key_N, Qt::ControlModifier);  // elsewhere first
        QTRY_VERIFY(app_->chat->conversationId() != conversation);
        click(waitNamed(QStringLiteral("searchField")));
        typeText(word);
        QQuickItem* snippet = nullptr;
        QTRY_VERIFY((snippet = visibleNamed(QStringLiteral("searchSnippet"))));
        QVERIFY2(snippet->property("text").toString().startsWith(QStringLiteral("In version 1: ")), qPrintable(snippet->property("text").toString()));
        QVERIFY(snippet->property("text").toString().contains(QLatin1Char('[') + word, Qt::CaseInsensitive));
        shot(QStringLiteral("found"));
        click(snippet);
        QTRY_COMPARE(app_->chat->conversationId(), conversation);
        QTRY_COMPARE(visibleNamed(QStringLiteral("variantLabel"))->property("text").toString(), QStringLiteral("1 / 2"));
        // The bubbles' texts (the list re-creates the answer's delegate: its place among the
        // items is not the row order).
        auto shownTexts = [&] {
            QStringList texts;
            for (QQuickItem* t : visibleItems([](QQuickItem* i) { return i->objectName() == QLatin1String("messageText"); })) {
                QString plain;
                QMetaObject::invokeMethod(t, "getText", Q_RETURN_ARG(QString, plain), Q_ARG(int, 0), Q_ARG(int, t->property("length").toInt()));
                texts << plain;
            }
            return texts;
        };
        QTRY_VERIFY(shownTexts().contains(first));
        QVERIFY(!shownTexts().contains(second));
        shot(QStringLiteral("shown"));
    }

    // Edit an earlier question and resend: the later turns stay in the database, the edit
    // continues in a new conversation shown in the sidebar.
    void editAnEarlierQuestion() {
        QVERIFY(start(1400, 900));
        QVERIFY(loadModel());
        QVERIFY(sendByKeyboard(QStringLiteral("Once upon a time")));
        QVERIFY(sendByKeyboard(QStringLiteral(" The end.")));
        const qint64 original = app_->chat->conversationId();
        // Both questions' bubbles laid out (the list may place the new rows a frame later).
        QList<QQuickItem*> edits;
        QTRY_VERIFY((edits = visibleItems([](QQuickItem* i) { return i->objectName() == QLatin1String("editButton"); })).size() >= 2);
        click(edits[1]);  // the second question's
        QQuickItem* editor = visibleNamed(QStringLiteral("editor"));
        QVERIFY(editor);
        QVERIFY(insideWindow(editor));
        editor->forceActiveFocus();
        QTest::keyClick(window(), Qt::Key_A, Qt::ControlModifier);
        typeText(QStringLiteral(" Then a dog came."));
        shot(QStringLiteral("editing"));
        QSignalSpy done(app_->chat.get(), &ChatController::answerFinished);
        click(waitNamed(QStringLiteral("resendButton")));
        QVERIFY(arrived(done, 20000));
        shot(QStringLiteral("resent"));
        QVERIFY(app_->chat->conversationId() != original);
        QCOMPARE(app_->store.messages(original).size(), 4);
        QCOMPARE(app_->store.messages(original)[2].content, QStringLiteral(" The end."));
        const auto edited = app_->store.messages(app_->chat->conversationId());
        QCOMPARE(edited.size(), 4);
        QCOMPARE(edited[2].content, QStringLiteral(" Then a dog came."));
        QVERIFY(sidebarRow(QStringLiteral("Once upon a time (edited)")));
    }

    // Branch from a candidate token of an earlier answer (the Probabilities tab): nothing is lost.
    void branchFromAnEarlierAnswer() {
        QVERIFY(start(1400, 900));
        app_->settings->setInspectorTab(QStringLiteral("probabilities"));
        QVERIFY(loadModel());
        QVERIFY(sendByKeyboard(QStringLiteral("Once upon a time")));
        QVERIFY(sendByKeyboard(QStringLiteral(" The end.")));
        const qint64 original = app_->chat->conversationId();
        app_->inspector->select(1, 4);  // as a click on the answer's fifth token does
        QTRY_VERIFY(visibleNamed(QStringLiteral("candidate_1")));
        shot(QStringLiteral("candidates"));
        QSignalSpy done(app_->chat.get(), &ChatController::answerFinished);
        QQuickItem* other = nullptr;
        QTRY_VERIFY((other = unpickedCandidate()));
        click(other);
        QVERIFY(arrived(done, 20000));
        shot(QStringLiteral("branched"));
        QVERIFY(app_->chat->conversationId() != original);
        QCOMPARE(app_->store.messages(original).size(), 4);  // the later question and answer stay
        QCOMPARE(app_->store.messages(app_->chat->conversationId()).size(), 2);
        QCOMPARE(app_->chat->title(), QStringLiteral("Once upon a time (version 2)"));
        QCOMPARE(visibleNamed(QStringLiteral("variantLabel"))->property("text").toString(), QStringLiteral("2 / 2"));
        QVERIFY(sidebarRow(QStringLiteral("Once upon a time (version 2)")));

        // Back to the original: all four turns on screen again.
        click(sidebarRow(QStringLiteral("Once upon a time")));
        QTRY_COMPARE(app_->chat->conversationId(), original);
        QTRY_COMPARE(visibleItems([](QQuickItem* i) { return i->objectName() == QLatin1String("messageText"); }).size(), 4);
        shot(QStringLiteral("original"));
    }

    // Export both formats from the conversation's ⋯ button (no right-click), through "Save as"
    // with the suggested name, then read the files back.
    void exportBothFormats() {
        QVERIFY(start(1400, 900));
        QVERIFY(loadModel());
        QVERIFY(sendByKeyboard(QStringLiteral("Once upon a time")));
        const QString answer = app_->chat->messages()->at(1).text;
        for (const QString& format : {QStringLiteral("md"), QStringLiteral("json")}) {
            click(waitNamed(QStringLiteral("conversationActions")));
            QQuickItem* entry = nullptr;
            QTRY_VERIFY((entry = visibleWithText(format == QLatin1String("md") ? QStringLiteral("Export as Markdown…")
                                                                                 : QStringLiteral("Export as JSON (with token probabilities)…"))));
            click(entry);
            QQuickItem* field = nullptr;
            QTRY_VERIFY((field = visibleNamed(QStringLiteral("savePathField"))));
            QTRY_VERIFY(field->hasActiveFocus());
            QVERIFY(insideWindow(field));
            QVERIFY2(field->property("text").toString().endsWith(QStringLiteral("/Once upon a time.") + format),
                     qPrintable(field->property("text").toString()));
            shot(QStringLiteral("save-as-") + format);
            // Typing replaces the selected name: a new file in another folder.
            QTest::keyClick(window(), Qt::Key_A, Qt::ControlModifier);
            const QString path = dir_.filePath(QStringLiteral("export #1.") + format);
            typeText(path);
            QTest::keyClick(window(), Qt::Key_Return);
            QTRY_VERIFY(QFile::exists(path));
            QFile f(path);
            QVERIFY(f.open(QIODevice::ReadOnly));
            const QByteArray bytes = f.readAll();
            if (format == QLatin1String("md")) {
                QVERIFY(bytes.contains("Once upon a time"));
                QVERIFY(bytes.contains(answer.toUtf8()));
            } else {
                const QJsonObject doc = QJsonDocument::fromJson(bytes).object();
                QCOMPARE(doc.value(QStringLiteral("messages")).toArray().size(), 2);
                QCOMPARE(doc.value(QStringLiteral("messages")).toArray()[1].toObject().value(QStringLiteral("content")).toString(), answer);
            }
        }
        QCOMPARE(app_->chat->lastError(), QString());
    }

    // Keyboard only: Tab leaves the composer without typing a tab; Ctrl+B / Ctrl+I hide and show
    // the side panels; Ctrl+N starts afresh keeping the mode and system prompt.
    void keyboardOnly() {
        QVERIFY(start(1400, 900));
        QVERIFY(loadModel());
        QQuickItem* input = item(QStringLiteral("composerInput"));
        input->forceActiveFocus();
        typeText(QStringLiteral("Hello"));
        QTest::keyClick(window(), Qt::Key_Tab);
        QCOMPARE(input->property("text").toString(), QStringLiteral("Hello"));
        QVERIFY(!input->hasActiveFocus());
        QVERIFY(window()->activeFocusItem());
        shot(QStringLiteral("tabbed"));
        QTest::keyClick(window(), Qt::Key_Backtab, Qt::ShiftModifier);
        QTRY_VERIFY(input->hasActiveFocus());

        app_->chat->setMode(ChatController::Mode::Chat);
        app_->chat->setSystemPrompt(QStringLiteral("Be brief."));
        QTest::keyClick(window(), Qt::Key_N, Qt::ControlModifier);
        QCOMPARE(app_->chat->mode(), ChatController::Mode::Chat);
        QCOMPARE(app_->chat->systemPrompt(), QStringLiteral("Be brief."));
        QTest::keyClick(window(), Qt::Key_I, Qt::ControlModifier);
        QTRY_VERIFY(!app_->settings->inspectorVisible());
        QVERIFY(!app_->inspector->shown());  // nothing on screen follows the stream
        QVERIFY(!app_->inspector->detailsShown());
        QTest::keyClick(window(), Qt::Key_I, Qt::ControlModifier);
        QTRY_VERIFY(app_->settings->inspectorVisible());
        QCOMPARE(app_->inspector->shown(), QStringList({"probabilities", "layers", "attention", "timeline"}).contains(app_->settings->inspectorTab()));
        QCOMPARE(app_->inspector->detailsShown(), app_->settings->inspectorTab() == QLatin1String("probabilities"));
        shot(QStringLiteral("done"));
    }

    // A stored answer names the model that wrote it, not the model loaded now.
    void storedAnswersNameTheirOwnModel() {
        QVERIFY(start(1400, 900));
        QVERIFY(loadModel());
        StoredConversation c;
        c.title = QStringLiteral("Older chat");
        c.modelName = QStringLiteral("/models/TinyLlama.gguf");
        const qint64 id = *app_->store.createConversation(c);
        StoredMessage question;
        question.conversationId = id;
        question.role = QStringLiteral("user");
        question.content = QStringLiteral("Hi");
        QVERIFY(app_->store.appendMessage(question));
        StoredMessage answer;
        answer.conversationId = id;
        answer.position = 1;
        answer.role = QStringLiteral("assistant");
        answer.content = QStringLiteral("Hello!");
        answer.finishReason = QStringLiteral("eos");
        answer.stats = QJsonObject{{QStringLiteral("model"), QStringLiteral("TinyLlama")}, {QStringLiteral("generatedTokens"), 1}};
        QVERIFY(app_->store.appendMessage(answer));
        QTRY_VERIFY(sidebarRow(QStringLiteral("Older chat")));
        click(sidebarRow(QStringLiteral("Older chat")));
        QTRY_COMPARE(app_->chat->conversationId(), id);
        auto authors = visibleItems([](QQuickItem* i) { return i->objectName() == QLatin1String("authorLabel"); });
        std::sort(authors.begin(), authors.end(), [](QQuickItem* a, QQuickItem* b) { return a->mapToScene({0, 0}).y() < b->mapToScene({0, 0}).y(); });
        QCOMPARE(authors.size(), 2);
        QCOMPARE(authors[1]->property("text").toString(), QStringLiteral("TinyLlama"));
        shot(QStringLiteral("older"));
        // "1 token", not "1 tokens"
        QTRY_COMPARE(visibleItems([](QQuickItem* i) { return i->property("text").toString().startsWith(QStringLiteral("1 token ·")); }).size(), 1);
        shot(QStringLiteral("older"));
    }

    // The smallest window (820×600): the composer and every inspector tab are inside the window,
    // and each tab opens its panel.
    // The heat map in chat mode: tinted while the answer streams and once it is done (it showed
    // untinted until the conversation was reopened); the tooltip under the pointer names the token
    // under the pointer (it was empty, far away or the neighbour's); a clicked token is outlined.
    void heatMapTooltipAndSelection() {
        QVERIFY(start(1400, 900));
        QVERIFY(loadModel());
        app_->chat->setMode(ChatController::Mode::Chat);
        QCOMPARE(app_->chat->messages()->heatMode(), QStringLiteral("probability"));
        auto heatBody = [&]() -> QQuickItem* {
            const auto all = visibleItems([](QQuickItem* i) { return i->objectName() == QLatin1String("messageText"); });
            return all.isEmpty() ? nullptr : all.last();
        };
        auto tinted = [&](QQuickItem* body) { return body && body->property("text").toString().contains(QLatin1String("background-color")); };

        // Streaming: a long answer, looked at before it ends.
        app_->sampling->setMaxTokens(400);
        QQuickItem* input = item(QStringLiteral("composerInput"));
        input->forceActiveFocus();
        QSignalSpy done(app_->chat.get(), &ChatController::answerFinished);
        StepGate gate(*app_->engine, 12);  // looked at while it streams, however fast the machine
        typeText(QStringLiteral("Once upon a time"));
        QTest::keyClick(window(), Qt::Key_Return);
        QVERIFY(gate.waitHeld());
        QTRY_VERIFY(app_->chat->generating() && app_->chat->messages()->count() == 2 && app_->chat->messages()->at(1).steps.size() > 8);
        QTRY_VERIFY2_WITH_TIMEOUT(tinted(heatBody()), "no tint while streaming", 3000);
        shot(QStringLiteral("streaming"));
        QTest::keyClick(window(), Qt::Key_Escape);
        QVERIFY(arrived(done, 20000));
        gate.release();

        // Finished: still tinted, without reopening the conversation.
        QTRY_VERIFY2(tinted(heatBody()), "a finished chat answer is untinted");
        QQuickItem* body = heatBody();
        shot(QStringLiteral("finished"));

        // Hover the middle of some token's characters: the tooltip is that token's, beside the pointer.
        const QList<int> starts = app_->chat->messages()->heatText(1)->tokenStarts;
        QVERIFY(starts.size() > 8);
        int checked = 0;
        for (int step = 2; step < starts.size() - 1 && checked < 4; ++step) {
            const int a = starts[step], b = starts[step + 1];
            if (b - a < 3) continue;  // wide enough to hover inside
            QRectF ra, rb;
            QMetaObject::invokeMethod(body, "positionToRectangle", Q_RETURN_ARG(QRectF, ra), Q_ARG(int, a + 1));
            QMetaObject::invokeMethod(body, "positionToRectangle", Q_RETURN_ARG(QRectF, rb), Q_ARG(int, b - 1));
            if (qAbs(ra.y() - rb.y()) > 1) continue;  // on one line
            // Just right of the token's last-but-one character boundary: inside the token.
            const QPointF local((ra.x() + rb.x()) / 2 + 1, ra.y() + ra.height() / 2);
            const QPoint scene = body->mapToScene(local).toPoint();
            QTest::mouseMove(window(), scene);
            QObject* tip = body->findChild<QObject*>(QStringLiteral("tokenTip"));
            QVERIFY(tip);
            QTRY_VERIFY(tip->property("visible").toBool());
            QCOMPARE(body->property("hoveredStep").toInt(), step);
            QCOMPARE(tip->property("text").toString(), app_->inspector->describe(1, step));
            QVERIFY(!tip->property("text").toString().isEmpty());
            const QPointF tipAt = body->mapToScene(QPointF(tip->property("x").toReal(), tip->property("y").toReal()));
            QVERIFY2(QLineF(tipAt, QPointF(scene)).length() < 60, qPrintable(QStringLiteral("tip at %1,%2, pointer at %3,%4").arg(tipAt.x()).arg(tipAt.y()).arg(scene.x()).arg(scene.y())));
            if (checked == 0) shot(QStringLiteral("tooltip"));
            ++checked;
            // Click it: the step is selected, and outlined in the text.
            if (checked == 1) {
                QTest::mouseClick(window(), Qt::LeftButton, {}, scene);
                QTRY_COMPARE(app_->inspector->step(), step);
                QCOMPARE(app_->inspector->row(), 1);
                QQuickItem* mark = visibleNamed(QStringLiteral("selectedTokenMark"));
                QVERIFY2(mark, "the selected token is not outlined");
                const QRectF m = mark->mapRectToItem(body, QRectF(0, 0, mark->width(), mark->height()));
                QVERIFY2(m.contains(local), "the outline is not around the clicked token");
                shot(QStringLiteral("selected"));
            }
        }
        QVERIFY(checked > 0);

        // Right of the answer's last character, on its line: no token there, so no tooltip — and
        // no position past the text asked for (each such move printed "QTextCursor::setPosition:
        // Position N out of range", which fails this test).
        const int length = body->property("length").toInt();
        QRectF end;
        QMetaObject::invokeMethod(body, "positionToRectangle", Q_RETURN_ARG(QRectF, end), Q_ARG(int, length));
        QVERIFY2(end.x() + 10 < body->width(), "the last line fills the bubble: no room right of it");
        QVERIFY(body->property("hoveredStep").toInt() >= 0);
        QTest::mouseMove(window(), body->mapToScene(QPointF(end.x() + 6, end.y() + end.height() / 2)).toPoint());
        QTRY_COMPARE(body->property("hoveredStep").toInt(), -1);
        QVERIFY(!body->findChild<QObject*>(QStringLiteral("tokenTip"))->property("visible").toBool());
    }

    // Issue 27: clicking a token (the app's main gesture) leaves the window's shortcuts working
    // wherever focus went: Ctrl+B and Ctrl+I toggle the panels, Ctrl+R regenerates, Esc stops the
    // answer, Ctrl+N starts afresh. They were swallowed by the clicked text until the composer
    // was clicked.
    void shortcutsAfterClickingAToken() {
        QVERIFY(start(1400, 900));
        QVERIFY(loadModel());
        app_->chat->setMode(ChatController::Mode::Chat);
        QVERIFY(sendByKeyboard(QStringLiteral("Once upon a time")));
        // A click on the answer's third token, as a person would.
        const auto clickToken = [&](int step) { clickAnswerToken(step); };
        clickToken(2);
        shot(QStringLiteral("clicked"));
        const bool sidebar = app_->settings->sidebarVisible();
        QTest::keyClick(window(), Qt::Key_B, Qt::ControlModifier);
        QTRY_COMPARE(app_->settings->sidebarVisible(), !sidebar);
        QTest::keyClick(window(), Qt::Key_B, Qt::ControlModifier);
        QTRY_COMPARE(app_->settings->sidebarVisible(), sidebar);
        clickToken(3);
        QVERIFY(app_->settings->inspectorVisible());
        QTest::keyClick(window(), Qt::Key_I, Qt::ControlModifier);
        QTRY_VERIFY(!app_->settings->inspectorVisible());
        QTest::keyClick(window(), Qt::Key_I, Qt::ControlModifier);
        QTRY_VERIFY(app_->settings->inspectorVisible());

        // Ctrl+R, then Esc while the new version streams.
        clickToken(2);
        app_->sampling->setMaxTokens(400);
        StepGate gate(*app_->engine, 6);
        QSignalSpy done(app_->chat.get(), &ChatController::answerFinished);
        QTest::keyClick(window(), Qt::Key_R, Qt::ControlModifier);
        QVERIFY(gate.waitHeld());
        QTRY_VERIFY(app_->chat->generating());
        QTest::keyClick(window(), Qt::Key_Escape);
        QVERIFY(arrived(done, 20000));
        gate.release();
        QCOMPARE(app_->chat->messages()->at(1).finishReason, Message::Cancelled);
        QCOMPARE(app_->chat->messages()->at(1).variants.size(), size_t(2));

        clickToken(1);
        QTest::keyClick(window(), Qt::Key_N, Qt::ControlModifier);
        QTRY_COMPARE(app_->chat->messages()->count(), 0);
    }

    // The Layers tab shows one row per layer for the selected token; the Attention tab's heat-map
    // answers the pointer with the token under it and its weight (the engine's), and a click on a
    // generated token selects it (the Probabilities panel's step moves with it).
    void layersAndAttentionByMouse() {
        QVERIFY(start(1400, 900));
        QVERIFY(loadModel());
        app_->sampling->setMaxTokens(30);
        QSignalSpy done(app_->chat.get(), &ChatController::answerFinished);
        QVERIFY(app_->chat->send(QStringLiteral("Once upon a time")));
        QVERIFY(arrived(done, 20000));
        const ChatMessage& answer = app_->chat->messages()->at(1);
        QCOMPARE(answer.steps.size(), size_t(30));

        click(waitText(QStringLiteral("Layers")));
        QTRY_COMPARE(app_->settings->inspectorTab(), QStringLiteral("layers"));
        const int layers = app_->engine->modelDetails().layers;
        QTRY_VERIFY(visibleNamed(QStringLiteral("lensRow_%1").arg(layers - 1)));
        QVERIFY(!visibleNamed(QStringLiteral("lensRow_%1").arg(layers)));
        QVERIFY(visibleNamed(QStringLiteral("settledLabel")));
        shot(QStringLiteral("layers"));

        click(waitText(QStringLiteral("Attention")));
        QTRY_COMPARE(app_->settings->inspectorTab(), QStringLiteral("attention"));
        QQuickItem* heads = nullptr;
        QTRY_VERIFY((heads = visibleNamed(QStringLiteral("attentionHeads"))) && heads->property("columns").toInt() == answer.steps.back().position &&
                    insideWindow(heads));
        const int step = 10, position = answer.steps[step].position, row = 1;
        // AttentionHeatMap: cells start 64 px in, rows 14 px high. Measured each time: the panel is
        // laid out again as the pass's figures arrive.
        auto cell = [&] {
            const qreal cellW = (heads->width() - 64) / heads->property("columns").toInt();
            return heads->mapToScene(QPointF(64 + (position + 0.5) * cellW, row * 14 + 7)).toPoint();
        };
        // Hovering is checked on the item itself (tst_position_inspector): offscreen, hover from
        // synthesized moves reached the map only some of the time here. The click goes through the window.
        const QPoint at = cell();
        shot(QStringLiteral("attention"));
        QTest::mouseClick(window(), Qt::LeftButton, {}, at);
        QTRY_COMPARE(app_->inspector->step(), step);
        QCOMPARE(app_->inspector->row(), 1);
        // The heat-map now shows the pass that chose that token: its keys end before it.
        QTRY_COMPARE(heads->property("columns").toInt(), position);
        shot(QStringLiteral("attention-selected"));
    }

    // Issue 27: a right-to-left token set in one of our sentences keeps the sentence in order. The
    // Layers panel's "“X” was chosen by the pass that ran “Y” at position N…" took the direction of
    // its first strong character, a Hebrew X's, and drew its parts right to left: "was chosen…"
    // came out left of the token and "at position" left of "ran". Each token is now isolated.
    void rightToLeftTokenKeepsTheSentence() {
        QVERIFY(start(1400, 900));
        QVERIFY(loadAndWait(*app_->engine, QStringLiteral(INFERSCOPE_TEST_DATA_DIR "/llama-2-tiny-random.gguf")));
        app_->chat->setMode(ChatController::Mode::Completion);
        app_->sampling->setMaxTokens(3);
        QSignalSpy done(app_->chat.get(), &ChatController::answerFinished);
        QVERIFY(app_->chat->send(QStringLiteral("Shalom")));
        QVERIFY(arrived(done, 20000));
        const int row = app_->chat->messages()->count() - 1;
        // The Llama 2 vocabulary's token for the Hebrew letter shin; the answer branches to it at
        // its first token, as a click on a candidate's Branch does.
        int shin = -1;
        for (int id = 0; id < 32000 && shin < 0; ++id)
            if (app_->inspector->liveTokenText(id) == QStringLiteral("\u05E9")) shin = id;
        QVERIFY2(shin >= 0, "no token for ש");
        done.clear();
        QVERIFY(app_->chat->branchFrom(row, 0, shin));
        QVERIFY(arrived(done, 20000));
        app_->inspector->select(row, 0);
        click(waitText(QStringLiteral("Layers")));
        QTRY_COMPARE(app_->settings->inspectorTab(), QStringLiteral("layers"));
        QQuickItem* pass = nullptr;
        QTRY_VERIFY((pass = visibleNamed(QStringLiteral("inspectedPass"))) && pass->property("text").toString().contains(QStringLiteral("\u05E9")));
        shot(QStringLiteral("layers"));
        // Laid out as the label lays it out (its text and font, the direction found from the text).
        const QString sentence = pass->property("text").toString();
        QTextLayout layout(sentence, pass->property("font").value<QFont>());
        layout.beginLayout();
        QTextLine line = layout.createLine();
        line.setLineWidth(1e6);
        layout.endLayout();
        const int chosen = sentence.indexOf(QStringLiteral("\u05E9")), was = sentence.indexOf(QStringLiteral("was chosen")),
                  at = sentence.indexOf(QStringLiteral("at position"));
        QVERIFY(chosen >= 0 && was > chosen && at > was);
        const qreal xChosen = line.cursorToX(chosen), xWas = line.cursorToX(was), xAt = line.cursorToX(at);
        QVERIFY2(xChosen < xWas && xWas < xAt,
                 qPrintable(QStringLiteral("drawn out of order: ש at %1 px, \"was chosen\" at %2 px, \"at position\" at %3 px").arg(xChosen).arg(xWas).arg(xAt)));
    }

    // Tint by surprisal: chosen in the box above the conversation, the legend says what the colour
    // means in bits, the answer's tint is the surprisal one; the Probabilities panel's strip has a
    // bar per token and a click on one selects that step.
    void tintBySurprisalAndClickTheStrip() {
        QVERIFY(start(1400, 900));
        QVERIFY(loadModel());
        app_->settings->setInspectorVisible(false);  // only the box's own "surprisal" entry on screen
        QSignalSpy done(app_->chat.get(), &ChatController::answerFinished);
        QVERIFY(app_->chat->send(QStringLiteral("Once upon a time")));
        QVERIFY(arrived(done, 20000));
        click(item(QStringLiteral("heatMode")));
        QQuickItem* entry = nullptr;
        QTRY_VERIFY((entry = visibleWithText(QStringLiteral("surprisal"))));
        click(entry);
        QTRY_COMPARE(app_->settings->heatMode(), QStringLiteral("surprisal"));
        QCOMPARE(app_->chat->messages()->heatMode(), QStringLiteral("surprisal"));
        QQuickItem* legend = visibleNamed(QStringLiteral("heatLegend"));
        QVERIFY(legend);
        QVERIFY2(legend->property("text").toString().startsWith(QStringLiteral("Tint: surprisal")), qPrintable(legend->property("text").toString()));
        QVERIFY(legend->property("text").toString().contains(QStringLiteral("8 bits")));
        ChatModel* m = app_->chat->messages();
        const ChatMessage& answer = m->at(1);
        QCOMPARE(m->heatText(1)->spans, buildHeatText(answer.steps, HeatMode::Surprisal, answer.trimLeadingSpace, m->darkTheme()).spans);
        shot(QStringLiteral("tinted"));

        app_->settings->setInspectorVisible(true);
        QQuickItem* tab = visibleWithText(QStringLiteral("Probabilities"));
        QVERIFY(tab);
        click(tab);
        QTRY_COMPARE(app_->settings->inspectorTab(), QStringLiteral("probabilities"));
        QQuickItem* chart = nullptr;
        QTRY_VERIFY((chart = visibleNamed(QStringLiteral("surprisalChart"))));
        QTRY_COMPARE(chart->property("values").value<QList<qreal>>().size(), qsizetype(answer.steps.size()));
        // BarChart's bars start 44 px in and end 4 px before its right edge.
        const qreal barWidth = (chart->width() - 48) / qreal(answer.steps.size());
        const QPoint at = chart->mapToScene(QPointF(44 + 3.5 * barWidth, chart->height() / 2)).toPoint();
        QTest::mouseClick(window(), Qt::LeftButton, {}, at);
        QTRY_COMPARE(app_->inspector->step(), 3);
        QCOMPARE(app_->inspector->row(), 1);
        QVERIFY(!app_->inspector->following());
        QCOMPARE(chart->property("highlightIndex").toInt(), 3);
        shot(QStringLiteral("strip"));
    }

    // Save preset by keyboard: the popup's name field has the focus, Enter saves (typing went
    // nowhere: the field was not focused).
    void savePresetByKeyboard() {
        QVERIFY(start(1400, 900));
        app_->sampling->deletePreset(QStringLiteral("Mine"));  // left by an earlier run
        QVERIFY(!app_->sampling->presetNames().contains(QStringLiteral("Mine")));
        app_->settings->setInspectorVisible(true);
        QQuickItem* tab = visibleWithText(QStringLiteral("Settings"));
        QVERIFY(tab);
        click(tab);
        QTRY_COMPARE(app_->settings->inspectorTab(), QStringLiteral("settings"));
        QQuickItem* save = nullptr;
        QTRY_VERIFY((save = visibleWithText(QStringLiteral("Save…"))));
        click(save);
        QQuickItem* field = nullptr;
        QTRY_VERIFY((field = visibleNamed(QStringLiteral("presetName"))));
        QTRY_VERIFY2(field->hasActiveFocus(), "the preset name field has no focus");
        typeText(QStringLiteral("Mine"));
        QCOMPARE(field->property("text").toString(), QStringLiteral("Mine"));
        shot(QStringLiteral("typed"));
        QTest::keyClick(window(), Qt::Key_Return);
        QTRY_VERIFY(app_->sampling->presetNames().contains(QStringLiteral("Mine")));
        QTRY_VERIFY(!visibleNamed(QStringLiteral("presetName")));
        QVERIFY(app_->sampling->deletePreset(QStringLiteral("Mine")));  // the next scenarios start without it
    }

    // At 1400x900 the panels' contents stay inside the inspector: the token export's PNG button,
    // the Model panel's Engine line, and the KV map's hover readout (it was elided).
    void panelsFitAt1400x900() {
        QVERIFY(start(1400, 900));
        QVERIFY(loadModel());
        QVERIFY(sendByKeyboard(QStringLiteral("Once upon a time")));
        app_->settings->setInspectorVisible(true);
        QQuickItem* inspector = item(QStringLiteral("inspector"));
        QVERIFY(inspector);
        const QRectF panel = inspector->mapRectToScene(QRectF(0, 0, inspector->width(), inspector->height()));
        auto insidePanel = [&](QQuickItem* i, const QString& what) {
            QVERIFY2(i, qPrintable(what));
            const QRectF r = i->mapRectToScene(QRectF(0, 0, i->width(), i->height()));
            QVERIFY2(r.left() >= panel.left() - 0.5 && r.right() <= panel.right() + 0.5,
                     qPrintable(QStringLiteral("%1 at %2..%3, the inspector %4..%5").arg(what).arg(r.left()).arg(r.right()).arg(panel.left()).arg(panel.right())));
        };

        click(waitText(QStringLiteral("Probabilities")));
        QTRY_COMPARE(app_->settings->inspectorTab(), QStringLiteral("probabilities"));
        QQuickItem* png = nullptr;
        QTRY_VERIFY((png = visibleWithText(QStringLiteral("PNG"))));
        shot(QStringLiteral("probabilities"));
        insidePanel(png, QStringLiteral("PNG"));
        // The step's time is read whole ("0.36 ms pass …" was elided).
        const auto times = visibleItems([](QQuickItem* i) {
            const QString t = i->property("text").toString();
            return t.contains(QLatin1String(" ms sampling")) && (t.contains(QLatin1String(" ms pass + ")) || t.startsWith(QLatin1String("from prefill")));
        });
        QCOMPARE(times.size(), 1);
        QVERIFY2(!times[0]->property("truncated").toBool(), qPrintable(times[0]->property("text").toString()));

        click(waitText(QStringLiteral("Model")));
        QTRY_COMPARE(app_->settings->inspectorTab(), QStringLiteral("model"));
        QQuickItem* engine = nullptr;
        QTRY_VERIFY((engine = visibleWithText(app_->engine->deviceDescription())));
        shot(QStringLiteral("model"));
        QVERIFY2(engine->property("contentWidth").toReal() <= engine->width() + 0.5,
                 qPrintable(QStringLiteral("Engine text %1 px wide in %2").arg(engine->property("contentWidth").toReal()).arg(engine->width())));
        insidePanel(engine, QStringLiteral("Engine"));

        const auto kvTabs = visibleItems([](QQuickItem* i) {  // the tab, not the Settings heading of the same name
            return i->inherits("QQuickTabButton") && i->property("text").toString() == QLatin1String("KV cache");
        });
        QCOMPARE(kvTabs.size(), 1);
        click(kvTabs.first());
        QTRY_COMPARE(app_->settings->inspectorTab(), QStringLiteral("kv"));
        QQuickItem* grid = nullptr;
        QTRY_VERIFY((grid = visibleNamed(QStringLiteral("grid"))));
        QQuickItem* readout = visibleNamed(QStringLiteral("readout"));
        QVERIFY(readout);
        const QString idle = readout->property("text").toString();
        QTest::mouseMove(window(), grid->mapToScene(QPointF(grid->width() / 8, grid->height() / 2)).toPoint());
        QTRY_VERIFY(readout->property("text").toString() != idle);
        shot(QStringLiteral("kv-hover"));
        QVERIFY2(!readout->property("truncated").toBool(), qPrintable(readout->property("text").toString()));
        insidePanel(readout, QStringLiteral("readout"));

        // The KV header's shape is read whole, from its layer count on (elided from the left, it
        // read "…yers · 4 KV heads · …" beside the title).
        QQuickItem* shape = visibleNamed(QStringLiteral("shapeLabel"));
        QVERIFY(shape);
        const QString shapeText = shape->property("text").toString();
        QVERIFY2(shapeText.startsWith(QStringLiteral("%1 layers · ").arg(app_->engine->modelDetails().layers)), qPrintable(shapeText));
        QVERIFY2(!shape->property("truncated").toBool(), qPrintable(shapeText));
        insidePanel(shape, QStringLiteral("KV shape"));
    }

    // Without a model the status bar says so and nothing else: it said "0 / 1 tokens" and
    // "memory 0 B (weights 0 B + KV cache 0 B)".
    void noModelSaysSo() {
        QVERIFY(start(1400, 900));
        shot(QStringLiteral("no-model"));
        QCOMPARE(item(QStringLiteral("stateLabel"))->property("text").toString(), QStringLiteral("No model"));
        QVERIFY(!item(QStringLiteral("contextBar"))->isVisible());
        QVERIFY(visibleItems([](QQuickItem* i) { return i->property("text").toString().contains(QLatin1String(" / 1 tokens")); }).isEmpty());
        QVERIFY(visibleItems([](QQuickItem* i) { return i->property("text").toString().startsWith(QLatin1String("memory ")); }).isEmpty());
        QVERIFY(loadModel());
        QTRY_VERIFY(item(QStringLiteral("contextBar"))->isVisible());
        QCOMPARE(item(QStringLiteral("contextLabel"))->property("text").toString(), QStringLiteral("0 / 2,048 tokens"));
    }

    // The status bar's last item, the memory, is read whole inside the window at both sizes (it
    // ran past the right edge), with its parts where there is room for them.
    void statusBarFits_data() {
        QTest::addColumn<int>("w");
        QTest::addColumn<int>("h");
        QTest::addColumn<bool>("parts");
        QTest::newRow("1400x900") << 1400 << 900 << true;
        QTest::newRow("820x600") << 820 << 600 << false;
    }
    void statusBarFits() {
        QFETCH(int, w);
        QFETCH(int, h);
        QFETCH(bool, parts);
        QVERIFY(start(w, h));
        QVERIFY(loadModel());
        QVERIFY(sendByKeyboard(QStringLiteral("Once upon a time")));
        shot(QStringLiteral("status-%1").arg(w));
        QQuickItem* memory = item(QStringLiteral("memoryLabel"));
        QVERIFY(memory && memory->isVisible());
        const QString text = memory->property("text").toString();
        QVERIFY2(insideWindow(memory), qPrintable(text));
        QVERIFY2(memory->property("contentWidth").toReal() <= memory->width() + 0.5, qPrintable(text));
        QVERIFY2(text.startsWith(QLatin1String("memory 2.37 MiB")), qPrintable(text));  // the default f16 cache
        QCOMPARE(text.contains(QLatin1String("weights 1.12 MiB + KV cache 1.25 MiB")), parts);
        // Nothing drawn over it: the labels before it end where it begins.
        QQuickItem* firstToken = item(QStringLiteral("firstTokenLabel"));
        const qreal firstTokenRight = firstToken->mapToScene(QPointF(firstToken->width(), 0)).x();
        QVERIFY2(firstTokenRight <= memory->mapToScene(QPointF(0, 0)).x(), qPrintable(text));
        QVERIFY(insideWindow(firstToken));
    }

    // Settings open, the mode switched to chat from the top bar: the system prompt appears under
    // the "Conversation" heading and the panel's headings stay clear of it (it was drawn over
    // "Sampling").
    void settingsAfterSwitchingToChat() {
        QVERIFY(start(1400, 900));
        QVERIFY(loadModel());
        app_->settings->setInspectorVisible(true);
        click(waitText(QStringLiteral("Settings")));
        QTRY_COMPARE(app_->settings->inspectorTab(), QStringLiteral("settings"));
        QCOMPARE(app_->chat->mode(), ChatController::Mode::Completion);
        shot(QStringLiteral("completion"));
        click(item(QStringLiteral("modeBox")));
        QQuickItem* chat = nullptr;
        QTRY_VERIFY((chat = visibleWithText(QStringLiteral("Chat"))));
        click(chat);
        QTRY_COMPARE(app_->chat->mode(), ChatController::Mode::Chat);
        QQuickItem* prompt = nullptr;
        QTRY_VERIFY((prompt = visibleNamed(QStringLiteral("systemPrompt"))));
        shot(QStringLiteral("chat"));
        const QRectF field = prompt->mapRectToScene(QRectF(0, 0, prompt->width(), prompt->height()));
        for (const QString& heading : {QStringLiteral("Sampling"), QStringLiteral("Conversation"), QStringLiteral("System prompt")}) {
            QQuickItem* label = visibleWithText(heading);
            QVERIFY2(label, qPrintable(heading));
            const QRectF r = label->mapRectToScene(QRectF(0, 0, label->width(), label->height()));
            QVERIFY2(r.bottom() <= field.top() + 0.5,
                     qPrintable(QStringLiteral("%1 at y %2..%3, the system prompt at %4..%5").arg(heading).arg(r.top()).arg(r.bottom()).arg(field.top()).arg(field.bottom())));
        }
    }

    // Keyboard only, beyond the composer: Tab reaches the top bar, the conversation list and the
    // inspector's tabs, each with its focus drawn; Enter and Space activate, arrows move in the
    // list and between the tabs, the Menu key opens a conversation's actions. (The list's rows and
    // the tabs had no focus of their own and none drawn; Enter did nothing on a button.)
    void keyboardReachesSidebarTopBarAndTabs() {
        QVERIFY(start(1400, 900));
        QVERIFY(loadModel());
        app_->settings->setInspectorTab(QStringLiteral("probabilities"));
        QVERIFY(sendByKeyboard(QStringLiteral("Once upon a time")));
        const qint64 first = app_->chat->conversationId();
        QTest::keyClick(window(), Qt::Key_N, Qt::ControlModifier);
        QVERIFY(sendByKeyboard(QStringLiteral("One day")));
        const qint64 second = app_->chat->conversationId();
        QVERIFY(first != second);
        click(item(QStringLiteral("composerInput")));
        QTRY_VERIFY(item(QStringLiteral("composerInput"))->hasActiveFocus());

        // Tab (at most once round every stop) until the focus is on an item that matches.
        auto tabTo = [&](const std::function<bool(QQuickItem*)>& match) {
            for (int n = 0; n < 60; ++n) {
                QTest::keyClick(window(), Qt::Key_Tab);
                if (QQuickItem* f = window()->activeFocusItem(); f && match(f)) return f;
            }
            return static_cast<QQuickItem*>(nullptr);
        };
        auto ringShown = [](QQuickItem* i) {
            QQuickItem* ring = i ? i->findChild<QQuickItem*>(QStringLiteral("focusRing")) : nullptr;
            return ring && ring->isVisible();
        };

        // The top bar: the model button, Enter opens its menu.
        QQuickItem* modelButton = tabTo([&](QQuickItem* f) { return f == item(QStringLiteral("modelButton")); });
        QVERIFY2(modelButton, "Tab never reached the model button");
        QVERIFY(modelButton->property("visualFocus").toBool());
        QTest::keyClick(window(), Qt::Key_Return);
        QTRY_VERIFY(visibleWithText(QStringLiteral("Open GGUF file…  (Ctrl+O)")));
        shot(QStringLiteral("model-menu"));
        QTest::keyClick(window(), Qt::Key_Escape);
        QTRY_VERIFY(!visibleWithText(QStringLiteral("Open GGUF file…  (Ctrl+O)")));

        // The conversation list: one stop, the current row outlined, Down then Enter opens the
        // other conversation.
        QQuickItem* list = item(QStringLiteral("conversationList"));
        modelButton->forceActiveFocus(Qt::TabFocusReason);
        // The list's focus is on its current row, inside it.
        QVERIFY2(tabTo([&](QQuickItem* f) { return f == list || list->isAncestorOf(f); }), "Tab never reached the conversation list");
        QVERIFY(list->hasActiveFocus());
        const int rowBefore = list->property("currentIndex").toInt();
        QVERIFY(rowBefore >= 0);
        QQuickItem* current = list->property("currentItem").value<QQuickItem*>();
        QVERIFY2(ringShown(current), "the list's current row is not outlined");
        shot(QStringLiteral("list-focused"));
        const qint64 rowId = current->property("conversationId").toLongLong();
        QTest::keyClick(window(), rowBefore == 0 ? Qt::Key_Down : Qt::Key_Up);
        QTRY_VERIFY(list->property("currentIndex").toInt() != rowBefore);
        current = list->property("currentItem").value<QQuickItem*>();
        const qint64 otherId = current->property("conversationId").toLongLong();
        QVERIFY(otherId != rowId);
        QVERIFY(ringShown(current));
        QTest::keyClick(window(), Qt::Key_Return);
        QTRY_COMPARE(app_->chat->conversationId(), otherId);
        QVERIFY(list->hasActiveFocus());
        shot(QStringLiteral("list-opened"));
        // Space opens too: back to the first row.
        QTest::keyClick(window(), rowBefore == 0 ? Qt::Key_Up : Qt::Key_Down);
        QTest::keyClick(window(), Qt::Key_Space);
        QTRY_COMPARE(app_->chat->conversationId(), rowId);
        // The Menu key: the row's actions, without a mouse.
        QTest::keyClick(window(), Qt::Key_Menu);
        QTRY_VERIFY(visibleWithText(QStringLiteral("Rename")));
        shot(QStringLiteral("row-actions"));
        QTest::keyClick(window(), Qt::Key_Escape);
        QTRY_VERIFY(!visibleWithText(QStringLiteral("Rename")));
        // Tab from the list: the current row's ⋯ button, Enter opens the same menu.
        QVERIFY(list->hasActiveFocus());
        QTest::keyClick(window(), Qt::Key_Tab);
        QQuickItem* actions = window()->activeFocusItem();
        QVERIFY(actions);
        QCOMPARE(actions->objectName(), QStringLiteral("conversationActions"));
        QTest::keyClick(window(), Qt::Key_Return);
        QTRY_VERIFY(visibleWithText(QStringLiteral("Rename")));
        QTest::keyClick(window(), Qt::Key_Escape);
        QTRY_VERIFY(!visibleWithText(QStringLiteral("Rename")));

        // The inspector's tabs: the shown one is the stop, outlined; Right and Left show the next
        // and come back, Enter keeps it shown.
        QQuickItem* tab = tabTo([](QQuickItem* f) { return QByteArray(f->metaObject()->className()).startsWith("InspectorTab"); });
        QVERIFY2(tab, "Tab never reached the inspector's tabs");
        QCOMPARE(tab->property("text").toString(), QStringLiteral("Probabilities"));
        QVERIFY2(ringShown(tab), "the focused tab is not outlined");
        shot(QStringLiteral("tab-focused"));
        QTest::keyClick(window(), Qt::Key_Right);
        QTRY_COMPARE(app_->settings->inspectorTab(), QStringLiteral("layers"));
        QCOMPARE(window()->activeFocusItem()->property("text").toString(), QStringLiteral("Layers"));
        QVERIFY(ringShown(window()->activeFocusItem()));
        shot(QStringLiteral("tab-right"));
        QTest::keyClick(window(), Qt::Key_Left);
        QTRY_COMPARE(app_->settings->inspectorTab(), QStringLiteral("probabilities"));
        QTest::keyClick(window(), Qt::Key_Return);
        QCOMPARE(app_->settings->inspectorTab(), QStringLiteral("probabilities"));
        // One stop for the bar: the next Tab leaves it.
        QTest::keyClick(window(), Qt::Key_Tab);
        QVERIFY(!QByteArray(window()->activeFocusItem()->metaObject()->className()).startsWith("InspectorTab"));

        // Enter on a toggle of the top bar: the inspector is hidden and shown again.
        QQuickItem* toggle = tabTo([](QQuickItem* f) { return f->property("text").toString() == QStringLiteral("◨"); });
        QVERIFY(toggle);
        QTest::keyClick(window(), Qt::Key_Return);
        QTRY_VERIFY(!app_->settings->inspectorVisible());
        QTest::keyClick(window(), Qt::Key_Space);
        QTRY_VERIFY(app_->settings->inspectorVisible());
    }

    // Dark theme: every label on screen is readable on what is drawn behind it, WCAG's 4.5:1 for
    // text (3:1 for bold text of 14 px and more), measured on the rendered window: the label's
    // colour against the most common colour inside its box. The selected conversation was white
    // on light violet (2.7:1), the sampler funnel's percentages light on light blue (2.1:1).
    void darkThemeIsReadable_data() {
        QTest::addColumn<QString>("panel");
        QTest::newRow("probabilities") << QStringLiteral("probabilities");
        QTest::newRow("layers") << QStringLiteral("layers");
        QTest::newRow("attention") << QStringLiteral("attention");
        QTest::newRow("timeline") << QStringLiteral("timeline");
        QTest::newRow("kv") << QStringLiteral("kv");
        QTest::newRow("settings") << QStringLiteral("settings");
        QTest::newRow("model") << QStringLiteral("model");
    }
    void darkThemeIsReadable() {
        QFETCH(QString, panel);
        QVERIFY(start(1400, 900));
        app_->settings->setSessionTheme(QStringLiteral("dark"));
        app_->settings->setInspectorVisible(true);
        app_->settings->setInspectorTab(panel);
        QVERIFY(loadModel());
        app_->sampling->setMaxTokens(24);
        QVERIFY(sendByKeyboard(QStringLiteral("Once upon a time")));
        app_->inspector->select(1, 3);  // a token picked with a high probability: the funnel's cells filled
        if (panel == QLatin1String("layers") || panel == QLatin1String("attention"))  // the engine's answer about it shown
            QTRY_VERIFY(visibleNamed(QStringLiteral("inspectedPass")) &&
                        visibleNamed(QStringLiteral("inspectedPass"))->property("text").toString().contains(QStringLiteral("position %1").arg(app_->chat->messages()->at(1).steps[3].position - 1)));
        shot(QStringLiteral("dark-") + panel);
        const QImage image = window()->grabWindow().convertToFormat(QImage::Format_RGB32);
        auto luminance = [](QColor c) {
            auto f = [](double x) { return x <= 0.03928 ? x / 12.92 : std::pow((x + 0.055) / 1.055, 2.4); };
            return 0.2126 * f(c.redF()) + 0.7152 * f(c.greenF()) + 0.0722 * f(c.blueF());
        };
        auto contrast = [&](QColor a, QColor b) {
            const double la = luminance(a), lb = luminance(b);
            return (std::max(la, lb) + 0.05) / (std::min(la, lb) + 0.05);
        };
        const auto labels = visibleItems([](QQuickItem* i) {
            const QByteArray cls = i->metaObject()->className();
            return (cls.startsWith("QQuickText") && !cls.startsWith("QQuickTextInput") && !cls.startsWith("QQuickTextEdit")) ||
                   cls.startsWith("QQuickLabel") || cls.startsWith("Label_");
        });
        QStringList unreadable;
        int checked = 0;
        for (QQuickItem* label : labels) {
            const QString text = label->property("text").toString();
            if (text.trimmed().isEmpty() || !label->isEnabled() || label->opacity() < 1 || !insideWindow(label)) continue;
            QQuickItem* control = label->parentItem();
            if (control && !control->isEnabled()) continue;  // disabled controls are dimmed on purpose
            const QRect box = label->mapRectToScene(QRectF(0, 0, std::min(label->width(), label->property("contentWidth").toReal()), std::min(label->height(), label->property("contentHeight").toReal()))).toAlignedRect().intersected(image.rect());
            // What is shown of it: its clipping ancestors (scroll views) cut it.
            QRect shown = box;
            for (QQuickItem* p = label->parentItem(); p; p = p->parentItem())
                if (p->clip()) shown &= p->mapRectToScene(QRectF(0, 0, p->width(), p->height())).toAlignedRect();
            if (shown != box) continue;  // partly hidden: what is behind it is not its background
            if (box.width() < 4 || box.height() < 4) continue;
            QHash<QRgb, int> counts;
            for (int y = box.top(); y <= box.bottom(); ++y)
                for (int x = box.left(); x <= box.right(); ++x) ++counts[image.pixel(x, y)];
            QRgb background = 0;
            int most = 0;
            for (auto it = counts.cbegin(); it != counts.cend(); ++it)
                if (it.value() > most) { most = it.value(); background = it.key(); }
            const QColor colour = label->property("color").value<QColor>();
            const QFont font = label->property("font").value<QFont>();
            const double needed = font.bold() && font.pixelSize() >= 14 ? 3.0 : 4.5;
            const double ratio = contrast(colour, QColor(background));
            ++checked;
            if (ratio < needed)
                unreadable << QStringLiteral("\"%1\" %2 on %3: %4:1").arg(text.left(40), colour.name(), QColor(background).name()).arg(ratio, 0, 'f', 2);
        }
        QVERIFY(checked > 20);
        QVERIFY2(unreadable.isEmpty(), qPrintable(unreadable.join(QLatin1Char('\n'))));
    }

    // After a branch the cache note, the answer's footer and the stats agree: the prefix up to
    // the branch is reused and only the new token is prefilled, in chat and completion mode, from
    // the last answer and an earlier one; with another conversation's context in the cache in
    // between, the note counts what was really prefilled. ("reused 0" beside 10 prefilled was
    // reported; not reproduced in any of these.)
    void branchNoteMatchesTheCache_data() {
        QTest::addColumn<ChatController::Mode>("mode");
        QTest::addColumn<int>("turns");
        QTest::addColumn<int>("row");
        QTest::addColumn<bool>("otherBetween");
        QTest::newRow("chat, earlier answer") << ChatController::Mode::Chat << 2 << 1 << false;
        QTest::newRow("chat, last answer") << ChatController::Mode::Chat << 1 << 1 << false;
        QTest::newRow("completion, last answer") << ChatController::Mode::Completion << 1 << 1 << false;
        QTest::newRow("chat, last of two") << ChatController::Mode::Chat << 2 << 3 << false;
        QTest::newRow("completion, another conversation in between") << ChatController::Mode::Completion << 1 << 1 << true;
    }
    void branchNoteMatchesTheCache() {
        QFETCH(ChatController::Mode, mode);
        QFETCH(int, turns);
        QFETCH(int, row);
        QFETCH(bool, otherBetween);
        QVERIFY(start(1400, 900));
        app_->settings->setInspectorTab(QStringLiteral("probabilities"));
        QVERIFY(loadModel());
        app_->chat->setMode(mode);
        QVERIFY(sendByKeyboard(QStringLiteral("Once upon a time")));
        if (turns > 1) QVERIFY(sendByKeyboard(QStringLiteral(" The end.")));
        const qint64 first = app_->chat->conversationId();
        if (otherBetween) {  // the cache then holds another text
            QTest::keyClick(window(), Qt::Key_N, Qt::ControlModifier);
            QVERIFY(sendByKeyboard(QStringLiteral("Tom had a red hat")));
            click(sidebarRow(QStringLiteral("Once upon a time")));
            QTRY_COMPARE(app_->chat->conversationId(), first);
        }
        app_->inspector->select(row, 4);
        QQuickItem* other = nullptr;
        QTRY_VERIFY(visibleNamed(QStringLiteral("candidate_1")));
        QTRY_VERIFY(app_->inspector->step() == 4 && !app_->inspector->following());
        QTRY_VERIFY((other = unpickedCandidate()));
        QSignalSpy done(app_->chat.get(), &ChatController::answerFinished);
        click(other);
        QVERIFY(arrived(done, 20000));
        shot(QStringLiteral("branched"));
        const int last = app_->chat->messages()->count() - 1;
        const AnswerStats& st = app_->chat->messages()->at(last).stats;
        const int reused = st.reusedTokens, prefilled = st.prefilledTokens;
        const QString note = app_->chat->cacheNote();
        QCOMPARE(reused + prefilled, st.promptTokens);
        if (otherBetween) {
            QVERIFY2(prefilled > 1, qPrintable(note));
            QVERIFY2(note.contains(QStringLiteral("reused %1 cached tokens and prefilled %2.").arg(reused).arg(prefilled)), qPrintable(note));
        } else {
            QCOMPARE(prefilled, 1);
            QVERIFY(reused > 0);
            QVERIFY2(note.contains(QStringLiteral("reused %1 cached tokens and ran only the new one").arg(reused)), qPrintable(note));
        }
        // The footer says the same.
        QVERIFY(!visibleItems([&](QQuickItem* i) {
                     return i->property("text").toString().contains(QStringLiteral("(%1 reused, %2 new)").arg(reused).arg(prefilled));
                 }).isEmpty());
    }

    void smallestWindow() {
        QVERIFY(start(820, 600));
        QVERIFY(loadModel());
        QVERIFY(sendByKeyboard(QStringLiteral("Once upon a time")));
        QVERIFY(insideWindow(item(QStringLiteral("composerInput"))));
        QVERIFY(insideWindow(item(QStringLiteral("sendButton"))));
        // The sidebar's texts end inside it, whole or elided ('2 messages · 2026-12-02 04:1' was cut).
        QQuickItem* list = item(QStringLiteral("conversationList"));
        const qreal sidebarRight = list->mapToScene(QPointF(list->width(), 0)).x();
        const auto textsInSidebar = [&] {
            return visibleItems([&](QQuickItem* i) {
                if (i->property("text").toString().isEmpty() || !i->property("truncated").isValid()) return false;
                for (QQuickItem* p = i->parentItem(); p; p = p->parentItem())
                    if (p == list) return true;
                return false;
            });
        };
        // The new conversation's row appears once the store has it: waited for, not assumed.
        QTRY_VERIFY(textsInSidebar().size() >= 2);
        for (QQuickItem* t : textsInSidebar()) {
            const qreal shownRight = t->mapToScene(QPointF(std::min(t->width(), t->property("contentWidth").toReal()), 0)).x();
            QVERIFY2(shownRight <= sidebarRight + 0.5, qPrintable(QStringLiteral("'%1' ends at %2, the list at %3").arg(t->property("text").toString()).arg(shownRight).arg(sidebarRight)));
        }
        const QStringList tabs = {QStringLiteral("Probabilities"), QStringLiteral("Layers"), QStringLiteral("Attention"), QStringLiteral("Timeline"),
                                  QStringLiteral("KV cache"), QStringLiteral("Settings"), QStringLiteral("Model")};
        const QStringList keys = {QStringLiteral("probabilities"), QStringLiteral("layers"), QStringLiteral("attention"), QStringLiteral("timeline"),
                                  QStringLiteral("kv"), QStringLiteral("settings"), QStringLiteral("model")};
        for (int t = 0; t < tabs.size(); ++t) {
            QQuickItem* tab = visibleWithText(tabs[t]);
            QVERIFY2(tab, qPrintable(tabs[t]));
            QVERIFY2(insideWindow(tab), qPrintable(tabs[t]));
            click(tab);
            QTRY_COMPARE(app_->settings->inspectorTab(), keys[t]);
            shot(keys[t]);
            // Only the panels on screen follow the stream: the step (Probabilities, Layers,
            // Attention, Timeline), its candidates (Probabilities), the pass times (Timeline).
            QCOMPARE(app_->inspector->shown(), t <= 3);
            QCOMPARE(app_->inspector->detailsShown(), t == 0);
            QCOMPARE(app_->timeline->active(), t == 3);
            // "Token N of M" is read whole, clear of the ▶ after it (the two overlapped).
            if (t <= 2) {
                QQuickItem* label = nullptr;
                QQuickItem* next = nullptr;
                const QString labelName = t == 0 ? QStringLiteral("stepLabel") : QStringLiteral("inspectedStepLabel");
                const QString nextName = t == 0 ? QStringLiteral("nextStepButton") : QStringLiteral("inspectedNextButton");
                QTRY_VERIFY((label = visibleNamed(labelName)) && (next = visibleNamed(nextName)) && settled(label));
                const QString text = label->property("text").toString();
                QVERIFY2(text.startsWith(QStringLiteral("Token ")), qPrintable(text));
                const qreal textRight = label->mapToScene(QPointF(std::max(label->width(), label->property("contentWidth").toReal()), 0)).x();
                const QRectF glyph = next->mapRectToScene(QRectF(0, 0, next->width(), next->height()));
                QVERIFY2(textRight <= glyph.left() + 0.5 && !label->property("truncated").toBool(),
                         qPrintable(QStringLiteral("'%1' ends at %2, its ▶ begins at %3 (label x %4 w %5 implicit %6 content %7)").arg(text).arg(textRight).arg(glyph.left()).arg(label->mapToScene(QPointF(0,0)).x()).arg(label->width()).arg(label->implicitWidth()).arg(label->property("contentWidth").toReal())));
            }
            // The KV header's shape is read whole, from its layer count on (elided from the left
            // beside the title, it read "…yers · 4 KV heads · …").
            if (keys[t] == QLatin1String("kv")) {
                QQuickItem* shape = nullptr;
                QTRY_VERIFY((shape = visibleNamed(QStringLiteral("shapeLabel"))) && settled(shape));
                const QString shapeText = shape->property("text").toString();
                QVERIFY2(shapeText.startsWith(QStringLiteral("%1 layers · ").arg(app_->engine->modelDetails().layers)), qPrintable(shapeText));
                QVERIFY2(!shape->property("truncated").toBool() && shape->property("contentWidth").toReal() <= shape->width() + 0.5, qPrintable(shapeText));
                const qreal inspectorRight = item(QStringLiteral("inspector"))->mapToScene(QPointF(item(QStringLiteral("inspector"))->width(), 0)).x();
                QVERIFY2(shape->mapToScene(QPointF(shape->width(), 0)).x() <= inspectorRight + 0.5, qPrintable(shapeText));
            }
            // The chat's contents stay in the chat's column, left of the inspector (the column
            // grew past it and the tint box, Edit, Regenerate and Send went under the inspector).
            const qreal inspectorLeft = item(QStringLiteral("inspector"))->mapToScene(QPointF(0, 0)).x();
            for (const QString& name : {QStringLiteral("messageList"), QStringLiteral("heatMode"), QStringLiteral("cacheNote"), QStringLiteral("composerInput"),
                                        QStringLiteral("sendButton"), QStringLiteral("editButton"), QStringLiteral("regenerateButton")}) {
                QQuickItem* i = visibleNamed(name);
                QVERIFY2(i, qPrintable(name));
                const qreal right = i->mapToScene(QPointF(i->width(), 0)).x();
                QVERIFY2(right <= inspectorLeft + 0.5, qPrintable(QStringLiteral("%1 ends at %2, the inspector begins at %3").arg(name).arg(right).arg(inspectorLeft)));
            }
        }
    }

    // Settings → KV cache: FP32 (the default is FP16) applies to the loaded model at once (the note
    // says the conversation's cache is recomputed, the status bar's memory figure doubles); Q8_0 is
    // refused for stories260K's head dim of 8 with the reason, the cache kept. Then "What FP16
    // costs" in the KV panel measures the answer and the chat is tinted by KL.
    void kvTypeSettingAndWhatItCosts() {
        QVERIFY(start(1400, 900));
        QVERIFY(loadModel());
        QCOMPARE(app_->engine->kvType(), QStringLiteral("f16"));
        QVERIFY(sendByKeyboard(QStringLiteral("Once upon a time")));
        auto choose = [&](const QString& label) {
            click(waitText(QStringLiteral("Settings")));
            QQuickItem* box = nullptr;
            QTRY_VERIFY((box = visibleNamed(QStringLiteral("kvTypeBox"))));
            click(box);
            QQuickItem* entry = nullptr;
            QTRY_VERIFY((entry = visibleWithText(label)));
            click(entry);
        };
        QSignalSpy applied(app_->engine.get(), &EngineController::kvTypeApplied);
        choose(QStringLiteral("FP32"));
        QVERIFY(arrived(applied, 10000));
        QCOMPARE(app_->engine->kvType(), QStringLiteral("f32"));
        QCOMPARE(app_->engine->kvBytesReserved(), 1280.0 * 2048);  // 2 × 5 layers × 4 KV heads × 8 × 4 B per token
        QQuickItem* note = nullptr;
        QTRY_VERIFY((note = visibleNamed(QStringLiteral("kvTypeNote"))));
        QCOMPARE(note->property("text").toString(), QStringLiteral("The cache is now FP32: 1.25 KiB per token. The conversation's keys and "
                                                                   "values are computed again, in FP32, when the next message is sent."));
        shot(QStringLiteral("f32"));
        QSignalSpy refused(app_->engine.get(), &EngineController::kvTypeRefused);
        choose(QStringLiteral("Q8_0"));
        QVERIFY(arrived(refused, 10000));
        QTRY_VERIFY(note->property("text").toString().startsWith(QStringLiteral("Not changed: a q8_0 KV cache needs a head dimension")));
        QCOMPARE(app_->engine->kvType(), QStringLiteral("f32"));
        QTRY_COMPARE(visibleNamed(QStringLiteral("kvTypeBox"))->property("currentText").toString(), QStringLiteral("FP32"));
        shot(QStringLiteral("refused"));

        QVERIFY(sendByKeyboard(QStringLiteral(" The dog")));
        const auto kvTabs = visibleItems([](QQuickItem* i) {  // the tab, not the Settings heading of the same name
            return i->inherits("QQuickTabButton") && i->property("text").toString() == QLatin1String("KV cache");
        });
        QCOMPARE(kvTabs.size(), 1);
        click(kvTabs.first());
        QQuickItem* measure = nullptr;
        QTRY_VERIFY((measure = visibleNamed(QStringLiteral("kvCostRun"))));
        QCOMPARE(visibleNamed(QStringLiteral("kvCostTitle"))->property("text").toString(), QStringLiteral("What FP16 costs"));
        // Scrolled into view: the section is below the grid and the tables.
        QQuickItem* panel = measure;
        while (panel && !panel->inherits("QQuickScrollView")) panel = panel->parentItem();
        QVERIFY(panel);
        QQuickItem* flick = panel->property("contentItem").value<QQuickItem*>();
        QVERIFY(flick);
        QVERIFY(settled(measure));
        const QPointF inContent = measure->mapToItem(flick->property("contentItem").value<QQuickItem*>(), QPointF(0, 0));
        flick->setProperty("contentY", std::max(0.0, inContent.y() - 200));
        QTRY_VERIFY(insideWindow(measure));
        click(measure);
        QQuickItem* mean = nullptr;
        QTRY_VERIFY_WITH_TIMEOUT((mean = visibleNamed(QStringLiteral("kvCost_mean"))), 20000);
        QVERIFY(!mean->property("text").toString().isEmpty());
        QCOMPARE(app_->chat->messages()->heatMode(), QStringLiteral("kvcost"));
        QTRY_VERIFY(visibleNamed(QStringLiteral("heatLegend"))->property("text").toString().startsWith(QStringLiteral("Tint: KL divergence")));
        shot(QStringLiteral("cost"));
    }

    // gemma3-tiny (head dim 64) with a Q8_0 cache chosen in Settings: "What Q8_0 costs" against
    // FP16 on the answer, the tint in the chat (random weights: the caches part visibly).
    void whatQ8_0CostsOnGemma3() {
        const QString gemma3 = QStringLiteral(INFERSCOPE_SHARED_DIR "/models/arch/gemma3-tiny.gguf");
        if (!QFile::exists(gemma3)) QSKIP("../shared/models/arch/gemma3-tiny.gguf not found");
        QVERIFY(start(1400, 900));
        app_->sampling->setMaxTokens(40);
        app_->settings->setKvType(QStringLiteral("q8_0"));
        QVERIFY(loadAndWait(*app_->engine, gemma3));
        QCOMPARE(app_->engine->kvType(), QStringLiteral("q8_0"));
        QVERIFY(sendByKeyboard(QStringLiteral("Tell me a story about a llama.")));
        app_->settings->setInspectorTab(QStringLiteral("kv"));
        QQuickItem* measure = nullptr;
        QTRY_VERIFY((measure = visibleNamed(QStringLiteral("kvCostRun"))));
        QCOMPARE(visibleNamed(QStringLiteral("kvCostTitle"))->property("text").toString(), QStringLiteral("What Q8_0 costs"));
        QQuickItem* panel = measure;
        while (panel && !panel->inherits("QQuickScrollView")) panel = panel->parentItem();
        QVERIFY(panel);
        QQuickItem* flick = panel->property("contentItem").value<QQuickItem*>();
        QVERIFY(settled(measure));
        const QPointF inContent = measure->mapToItem(flick->property("contentItem").value<QQuickItem*>(), QPointF(0, 0));
        flick->setProperty("contentY", std::max(0.0, inContent.y() - 480));
        QTRY_VERIFY(insideWindow(measure));
        click(measure);
        QTRY_VERIFY_WITH_TIMEOUT(visibleNamed(QStringLiteral("kvCost_mean")), 30000);
        QCOMPARE(visibleNamed(QStringLiteral("kvCostCaption"))->property("text").toString(),
                 QStringLiteral("Q8_0 against FP16, over the latest answer's 40 tokens."));
        QTRY_VERIFY(app_->chat->messages()->heatText(1) && std::any_of(app_->chat->messages()->heatText(1)->spans.begin(), app_->chat->messages()->heatText(1)->spans.end(),
                                                                      [](const HeatSpan& s) { return s.tint.isValid(); }));
        // The figures in view for the picture (the panel is laid out again as they appear).
        QQuickItem* caption = visibleNamed(QStringLiteral("kvCostCaption"));
        const QPointF captionAt = caption->mapToItem(flick->property("contentItem").value<QQuickItem*>(), QPointF(0, 0));
        flick->setProperty("contentY", std::max(0.0, captionAt.y() - 640));
        QTRY_VERIFY(insideWindow(caption));
        shot(QStringLiteral("cost"));
    }

    // "Compare with…" in the Probabilities panel: the answer of stories260K-wide read by its Q4_0
    // quantization, chosen from the recent models; the card names what it compared and shows the
    // figures the comparison gave; the answer is tinted by it; the conversation's model stays.
    void compareWithAnotherQuantization() {
        const QString wide = QStringLiteral(INFERSCOPE_SHARED_DIR "/models/quant/stories260K-wide.gguf");
        const QString q4 = QStringLiteral(INFERSCOPE_SHARED_DIR "/models/quant/stories260K-wide-Q4_0.gguf");
        if (!QFile::exists(wide) || !QFile::exists(q4)) QSKIP("../shared/models/quant/stories260K-wide{,-Q4_0}.gguf not found");
        QQuickItem* flick = nullptr;
        compareFromRecentModels(wide, q4, flick);
        if (QTest::currentTestFailed()) return;
        QQuickItem* mean = nullptr;
        QTRY_VERIFY_WITH_TIMEOUT((mean = visibleNamed(QStringLiteral("compare_meanKl"))), 30000);
        auto* compare = app_->find<QObject>(QStringLiteral("compareModel"));
        QVERIFY(compare);
        const CompareSummary s = compare->property("summary").value<CompareSummary>();
        QVERIFY(s.valid);
        QCOMPARE(s.tokens, 40);
        QCOMPARE(s.modelB, QStringLiteral("stories260K-wide-Q4_0.gguf"));
        QVERIFY(s.meanKl > 0);
        auto kl = [](double v) { return v < 0.0001 && v > 0 ? QString::number(v, 'e', 2) : QString::number(v, 'f', 4); };
        QCOMPARE(mean->property("text").toString(), kl(s.meanKl) + QStringLiteral(" ± ") + kl(s.meanKlError));
        QCOMPARE(visibleNamed(QStringLiteral("compare_pplB"))->property("text").toString(),
                 QString::number(s.perplexityB, 'f', 4) + QStringLiteral(" ± ") + QString::number(s.perplexityBError, 'f', 4));
        QVERIFY2(visibleNamed(QStringLiteral("compareCaption"))->property("text").toString().startsWith(
                     QStringLiteral("40 tokens of the answer in message 2 (version 1), written by ")),
                 qPrintable(visibleNamed(QStringLiteral("compareCaption"))->property("text").toString()));
        QCOMPARE(app_->chat->messages()->heatMode(), QStringLiteral("compare"));
        QTRY_VERIFY(app_->chat->messages()->heatText(1) && std::any_of(app_->chat->messages()->heatText(1)->spans.begin(), app_->chat->messages()->heatText(1)->spans.end(),
                                                                      [](const HeatSpan& h) { return h.tint.isValid(); }));
        QCOMPARE(app_->engine->modelPath(), wide);
        // The figures in view for the picture.
        QQuickItem* caption = visibleNamed(QStringLiteral("compareCaption"));
        const QPointF captionAt = caption->mapToItem(flick->property("contentItem").value<QQuickItem*>(), QPointF(0, 0));
        flick->setProperty("contentY", std::max(0.0, captionAt.y() - 380));
        QTRY_VERIFY(insideWindow(caption));
        shot(QStringLiteral("compare"));
        // A click on a token (the first flip, if any): both distributions there, side by side.
        const int step = s.firstFlip >= 0 ? s.firstFlip : 2;
        clickAnswerToken(step);
        QQuickItem* tokenSummary = nullptr;
        QTRY_VERIFY((tokenSummary = visibleNamed(QStringLiteral("compareTokenSummary"))));
        QVariantMap token;  // what CompareModel gives the card for the answer (row 1) at that step
        QVERIFY(QMetaObject::invokeMethod(compare, "tokenAt", Q_RETURN_ARG(QVariantMap, token), Q_ARG(int, 1), Q_ARG(int, step)));
        QVERIFY(!token.isEmpty());
        QVERIFY2(tokenSummary->property("text").toString().endsWith(
                     QStringLiteral(" · KL(A ‖ B) %1 nats").arg(token.value("kl").toDouble(), 0, 'f', 4)),
                 qPrintable(tokenSummary->property("text").toString()));
        QCOMPARE(bool(visibleNamed(QStringLiteral("compareTokenFlip"))), token.value("flip").toBool());
        QVERIFY(visibleNamed(QStringLiteral("compareCandidate_0")));
        QVERIFY(visibleNamed(QStringLiteral("compareFunnelB")));  // the answer's settings are known: B's stages
        QQuickItem* table = visibleNamed(QStringLiteral("compareTokenTable"));
        const QPointF tableAt = table->mapToItem(flick->property("contentItem").value<QQuickItem*>(), QPointF(0, 0));
        flick->setProperty("contentY", std::max(0.0, tableAt.y() - 300));
        QTRY_VERIFY(insideWindow(table));
        shot(QStringLiteral("compare-token"));
        // Another conversation: the result described an answer no longer shown.
        app_->chat->newConversation();
        QTRY_VERIFY(!visibleNamed(QStringLiteral("compare_meanKl")));
    }

    // Side by side: the top bar's button opens the dialog with the recent file proposed as the
    // second model; a typed prompt and Run both stream two columns at once, each with its own
    // figures; then each answer is read by the other model and the window says how it fared.
    void sideBySideInTheWindow() {
        const QString wide = QStringLiteral(INFERSCOPE_SHARED_DIR "/models/quant/stories260K-wide.gguf");
        const QString q4 = QStringLiteral(INFERSCOPE_SHARED_DIR "/models/quant/stories260K-wide-Q4_0.gguf");
        if (!QFile::exists(wide) || !QFile::exists(q4)) QSKIP("../shared/models/quant/stories260K-wide{,-Q4_0}.gguf not found");
        QVERIFY(start(1400, 900));
        app_->sampling->setMaxTokens(120);
        app_->settings->noteModelLoaded(q4);  // used before: in the recent list
        QVERIFY(loadAndWait(*app_->engine, wide));
        QQuickItem* button = nullptr;
        QTRY_VERIFY((button = visibleNamed(QStringLiteral("sideBySideButton"))));
        QTRY_VERIFY(button->property("enabled").toBool());
        click(button);
        QQuickItem* prompt = nullptr;
        QTRY_VERIFY((prompt = visibleNamed(QStringLiteral("sideBySidePrompt"))));
        QTRY_COMPARE(visibleNamed(QStringLiteral("sideBySideModel"))->property("text").toString(), q4);
        QTRY_VERIFY(prompt->hasActiveFocus());
        typeText(QStringLiteral("Once upon a time"));
        QCOMPARE(prompt->property("text").toString(), QStringLiteral("Once upon a time"));
        click(visibleNamed(QStringLiteral("sideBySideRun")));
        auto* pair = app_->find<QObject>(QStringLiteral("sideBySide"));
        QVERIFY(pair);
        QTRY_VERIFY_WITH_TIMEOUT(!pair->property("running").toBool(), 60000);
        QCOMPARE(pair->property("status").toString(), QString());
        auto kl = [](double v) { return v < 0.0001 && v > 0 ? QString::number(v, 'e', 2) : QString::number(v, 'f', 4); };
        for (int side = 0; side < 2; ++side) {
            const QVariantMap c = pair->property(side == 0 ? "columnA" : "columnB").toMap();
            const QVariantMap other = pair->property(side == 0 ? "columnB" : "columnA").toMap();
            const int tokens = c.value("tokens").toInt();
            QVERIFY(tokens > 10 && tokens <= 120);
            QQuickItem* title = visibleNamed(QStringLiteral("columnTitle%1").arg(side));
            QVERIFY(title);
            QCOMPARE(title->property("text").toString(), (side == 0 ? QStringLiteral("A · ") : QStringLiteral("B · ")) + c.value("name").toString());
            QVERIFY(c.value("name").toString().endsWith(side == 0 ? QStringLiteral("(stories260K-wide.gguf)") : QStringLiteral("(stories260K-wide-Q4_0.gguf)")));
            const QString figures = visibleNamed(QStringLiteral("columnFigures%1").arg(side))->property("text").toString();
            QVERIFY2(figures.contains(QStringLiteral("first token ")) && figures.contains(QStringLiteral(" · %1 tokens · ").arg(tokens)), qPrintable(figures));
            QCOMPARE(figures.startsWith(QStringLiteral("loaded in ")), side == 1);  // B was loaded for this run
            QCOMPARE(visibleNamed(QStringLiteral("columnEnd%1").arg(side))->property("text").toString(),
                     tokens == 120 ? QStringLiteral("Ended: length limit.") : QStringLiteral("Ended: ended its answer."));
            const QVariantMap cmp = c.value("compared").toMap();
            QVERIFY(cmp.value("valid").toBool());
            const QString compared = visibleNamed(QStringLiteral("columnCompared%1").arg(side))->property("text").toString();
            QVERIFY2(compared.startsWith(QStringLiteral("Read by %1: mean KL %2 ± %3 nats").arg(other.value("name").toString(), kl(cmp.value("meanKl").toDouble()),
                                                                                                   kl(cmp.value("meanKlError").toDouble()))),
                     qPrintable(compared));
            // The answer's own text in its column.
            QQuickItem* text = visibleNamed(QStringLiteral("columnText%1").arg(side));
            QVERIFY(text);
            QCOMPARE(text->property("length").toInt(), int(c.value("text").toString().size()));
        }
        QCOMPARE(app_->engine->modelPath(), wide);
        shot(QStringLiteral("side-by-side"));
    }

    // "Compare with…" a model of another vocabulary (qwen2-tiny against the bundled stories260K):
    // the card says why it compares on the text, shows bits per byte and the words where the two
    // differ most, and none of the token figures (no KL, no flips, no branch).
    void compareWithAnotherVocabularyOnTheText() {
        const QString qwen2 = QStringLiteral(INFERSCOPE_SHARED_DIR "/models/arch/qwen2-tiny.gguf");
        if (!QFile::exists(qwen2)) QSKIP("../shared/models/arch/qwen2-tiny.gguf not found");
        QQuickItem* flick = nullptr;
        compareFromRecentModels(bundledModel(), qwen2, flick);
        if (QTest::currentTestFailed()) return;
        QQuickItem* bits = nullptr;
        QTRY_VERIFY_WITH_TIMEOUT((bits = visibleNamed(QStringLiteral("compare_bitsPerByte"))), 30000);
        auto* compare = app_->find<QObject>(QStringLiteral("compareModel"));
        QVERIFY(compare);
        const CompareSummary s = compare->property("summary").value<CompareSummary>();
        QVERIFY(s.valid && s.onText);
        QCOMPARE(bits->property("text").toString(), QString::number(s.bitsPerByteA, 'f', 3) + QStringLiteral(" / ") + QString::number(s.bitsPerByteB, 'f', 3));
        QCOMPARE(visibleNamed(QStringLiteral("compare_textTokens"))->property("text").toString(),
                 QStringLiteral("%1 / %2").arg(s.tokensA).arg(s.tokensB));
        QVERIFY(!s.gaps.isEmpty());
        const QVariantMap top = s.gaps.first().toMap();
        QCOMPARE(visibleNamed(QStringLiteral("compareGap_0"))->property("text").toString(),
                 QString::number(top.value("bitsA").toDouble(), 'f', 2) + QStringLiteral(" / ") + QString::number(top.value("bitsB").toDouble(), 'f', 2));
        const QString caption = visibleNamed(QStringLiteral("compareCaption"))->property("text").toString();
        QVERIFY2(caption.startsWith(QStringLiteral("The two vocabularies differ")) && caption.contains(QStringLiteral("compared on the text")),
                 qPrintable(caption));
        QVERIFY(!visibleNamed(QStringLiteral("compare_meanKl")));
        QVERIFY(!visibleNamed(QStringLiteral("compareBranch")));
        QCOMPARE(app_->engine->modelPath(), bundledModel());
        QQuickItem* captionItem = visibleNamed(QStringLiteral("compareCaption"));
        const QPointF captionAt = captionItem->mapToItem(flick->property("contentItem").value<QQuickItem*>(), QPointF(0, 0));
        flick->setProperty("contentY", std::max(0.0, captionAt.y() - 380));
        QTRY_VERIFY(insideWindow(captionItem));
        // The answer in the window is tinted word by word, and the tint can be switched off and on.
        auto answerBody = [&]() -> QQuickItem* {
            const auto all = visibleItems([](QQuickItem* i) { return i->objectName() == QLatin1String("messageText"); });
            return all.isEmpty() ? nullptr : all.last();
        };
        auto tinted = [&] { return answerBody() && answerBody()->property("text").toString().contains(QLatin1String("background-color")); };
        QCOMPARE(app_->chat->messages()->heatMode(), QStringLiteral("compare"));
        QTRY_VERIFY2(tinted(), "the compared answer is not tinted");
        QTRY_VERIFY(visibleNamed(QStringLiteral("heatLegend")) &&
                    visibleNamed(QStringLiteral("heatLegend"))->property("text").toString().startsWith(QStringLiteral("Tint: how many more bits one model needs for each word")));
        shot(QStringLiteral("compare-text"));
        QQuickItem* tint = visibleNamed(QStringLiteral("compareTint"));
        QVERIFY2(tint && tint->property("checked").toBool(), "the tint box is hidden or unchecked on the text");
        const QPointF tintAt = tint->mapToItem(flick->property("contentItem").value<QQuickItem*>(), QPointF(0, 0));
        flick->setProperty("contentY", std::max(0.0, tintAt.y() - 300));
        QTRY_VERIFY(insideWindow(tint));
        const QString before = answerBody()->property("text").toString();
        click(tint);
        QTRY_VERIFY(app_->chat->messages()->heatMode() != QLatin1String("compare"));
        QTRY_VERIFY(answerBody()->property("text").toString() != before);
        click(tint);
        QTRY_COMPARE(app_->chat->messages()->heatMode(), QStringLiteral("compare"));
        QTRY_COMPARE(answerBody()->property("text").toString(), before);
    }
};

int main(int argc, char** argv) {
    QGuiApplication app(argc, argv);  // as app/main.cpp
    TestAcceptance test;
    return QTest::qExec(&test, argc, argv);
}
#include "tst_acceptance.moc"
