#include "app/screenshot_driver.h"

#include <QImage>
#include <QQuickItem>
#include <QQuickWindow>
#include <algorithm>
#include <cstdio>
#include <ctime>

#include "chat/chat_controller.h"
#include "engine/engine_controller.h"
#include "visualizer/step_inspector.h"

namespace inferscope {
namespace {

// CPU time this thread has used: what the GUI thread costs a decode on a machine with as many
// cores as decode threads (bench/gui_vs_cli.sh).
qint64 threadCpuNs() {
    timespec t{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return qint64(t.tv_sec) * 1000000000 + t.tv_nsec;
}

}  // namespace

ScreenshotDriver::ScreenshotDriver(EngineController* engine, ChatController* chat, QString outputPath, QString prompt,
                                   QObject* parent)
    : QObject(parent), engine_(engine), chat_(chat), output_(std::move(outputPath)), prompt_(std::move(prompt)) {
    SamplerParams greedy;
    greedy.temperature = 0.0f;
    chat_->setSamplerOverride(greedy);
    connect(engine_, &EngineController::modelChanged, this, &ScreenshotDriver::onModelReady);
    connect(engine_, &EngineController::loadFailed, this, [this](const QString& m) { failWith(m); });
    // The engine's decode rate counts its forward passes; the wall rate also what ran between them
    // (an open Layers or Attention panel's inspections): from the first step's arrival to the end.
    connect(engine_, &EngineController::stepsArrived, this, [this] {
        if (sinceFirstToken_.isValid()) return;
        sinceFirstToken_.start();
        guiCpuAtFirstTokenNs_ = threadCpuNs();
    });
    connect(engine_, &EngineController::inspectionArrived, this, [this](const InspectionReply& reply) {
        if (!sinceFirstToken_.isValid() || !chat_->generating() || !reply.inspection) return;
        inspections_ += 1;
        inspectionUs_ += reply.inspection->us;
    });
    connect(chat_, &ChatController::answerFinished, this, [this](int row) {
        const AnswerStats& st = chat_->messages()->at(row).stats;
        const double wallMs = sinceFirstToken_.isValid() ? double(sinceFirstToken_.nsecsElapsed()) / 1e6 : 0.0;
        std::fprintf(stderr, "inferscope: answer of %d tokens (%s): prefill %.1f tok/s, decode %.1f tok/s, first token %.1f ms, "
                             "wall %.1f tok/s after the first\n",
                     st.generatedTokens, qPrintable(finishName(chat_->messages()->at(row).finishReason)), st.prefillTokensPerSecond,
                     st.decodeTokensPerSecond, st.timeToFirstTokenMs, wallMs > 0 ? (st.generatedTokens - 1) * 1000.0 / wallMs : 0.0);
        if (wallMs > 0) {
            const double guiMs = double(threadCpuNs() - guiCpuAtFirstTokenNs_) / 1e6;
            std::fprintf(stderr, "inferscope: the GUI thread ran %.1f ms while it streamed: %.1f%% of a core\n", guiMs, 100.0 * guiMs / wallMs);
        }
        if (inspections_ > 0)
            std::fprintf(stderr, "inferscope: %d inspections while it streamed, %.1f ms in all: %.1f%% of the decode's wall time\n",
                         inspections_, double(inspectionUs_) / 1000.0, wallMs > 0 ? double(inspectionUs_) / 10.0 / wallMs : 0.0);
        // Give the scene graph a few frames to show the final state.
        if (inspector_) {
            QTimer::singleShot(400, this, [this, row] { showRejectedDraftThenCapture(row); });
            return;
        }
        if (answerAgain_ && !answeredAgain_ && (compareWith_.isEmpty() || compared_)) {
            QTimer::singleShot(400, this, &ScreenshotDriver::answerAgain);
            return;
        }
        QTimer::singleShot(400, this, openDialog_                             ? &ScreenshotDriver::openDialogThenCapture
                                      : !compareWith_.isEmpty() && !compared_ ? &ScreenshotDriver::compareThenCapture
                                                                              : &ScreenshotDriver::capture);
    });
    timeout_.setSingleShot(true);
    timeout_.setInterval(300 * 1000);
    connect(&timeout_, &QTimer::timeout, this, [this] { failWith(tr("timed out waiting for the answer")); });
    timeout_.start();
}

void ScreenshotDriver::setSampling(float temperature, quint64 seed) {
    SamplerParams p;
    p.temperature = temperature;
    p.seed = seed;
    chat_->setSamplerOverride(p);
}

void ScreenshotDriver::showRejectedDraftThenCapture(int row) {
    const auto& steps = chat_->messages()->at(row).steps;
    // The rejection that came closest to being kept: min(1, p/q) the highest (the first of equals).
    auto rejected = steps.end();
    for (auto s = steps.begin(); s != steps.end(); ++s)
        if (s->draft && s->draft->fate == DraftRecord::Fate::Corrected &&
            (rejected == steps.end() || s->draft->acceptProbability > rejected->draft->acceptProbability))
            rejected = s;
    if (rejected == steps.end()) return failWith(tr("the answer has no rejected draft: try another --seed or prompt"));
    inspector_->setFollowing(false);
    inspector_->select(row, int(rejected - steps.begin()));
    std::fprintf(stderr, "inferscope: showing the rejected draft at token %d\n", int(rejected - steps.begin()) + 1);
    QTimer::singleShot(300, this, [this] {
        scrollIntoView(QStringLiteral("draftNote"));
        QTimer::singleShot(400, this, &ScreenshotDriver::capture);
    });
}

void ScreenshotDriver::scrollIntoView(const QString& objectName) {
    auto* item = window_ ? window_->findChild<QQuickItem*>(objectName) : nullptr;
    QQuickItem* view = item;
    while (view && !view->inherits("QQuickScrollView")) view = view->parentItem();
    if (!view) return;
    auto* flick = view->property("contentItem").value<QQuickItem*>();
    auto* content = flick ? flick->property("contentItem").value<QQuickItem*>() : nullptr;
    if (!content) return;
    const double most = std::max(0.0, flick->property("contentHeight").toDouble() - flick->height());
    flick->setProperty("contentY", std::clamp(item->mapToItem(content, QPointF(0, 0)).y() - 60.0, 0.0, most));
}

void ScreenshotDriver::onModelReady() {
    if (sent_) return;
    sent_ = true;
    // Let the window finish its first frames (QML compilation, the scene graph's start) before the
    // prompt runs, so the answer's timings are not those of a machine busy starting the interface.
    QTimer::singleShot(600, this, [this] {
        if (prompt_.isEmpty()) {
            capture();
            return;
        }
        if (!chat_->send(prompt_)) failWith(tr("could not send the prompt: %1").arg(chat_->lastError()));
    });
}

void ScreenshotDriver::openDialogThenCapture() {
    if (!window_) return failWith(tr("no window to capture"));
    // As Ctrl+O does. Without a QML module the dialog needs, the window reports it (the error
    // banner) instead of making the dialog: that is a failure here, with its message.
    QMetaObject::invokeMethod(window_, "openModelDialog");
    QObject* dialog = window_->findChild<QObject*>(QStringLiteral("modelDialog"));
    if (!dialog) return failWith(tr("the file dialog was not made: %1").arg(engine_->errorMessage()));
    QTimer::singleShot(600, this, [this, dialog] {
        if (!dialog->property("visible").toBool()) return failWith(tr("the file dialog did not open"));
        std::fprintf(stderr, "inferscope: the file dialog is open\n");
        capture();
    });
}

void ScreenshotDriver::compareThenCapture() {
    if (!window_) return failWith(tr("no window to capture"));
    QObject* compare = window_->findChild<QObject*>(QStringLiteral("compareModel"));
    if (!compare) return failWith(tr("no comparison card in the window: show it with --panel probabilities"));
    bool started = false;
    QMetaObject::invokeMethod(compare, "run", Q_RETURN_ARG(bool, started), Q_ARG(QString, compareWith_));
    if (!started) return failWith(tr("the comparison did not start: %1").arg(compare->property("status").toString()));
    showComparison(compare);
}

void ScreenshotDriver::showComparison(QObject* compare) {
    if (compare->property("running").toBool()) {
        QTimer::singleShot(100, this, [this, compare] { showComparison(compare); });
        return;
    }
    if (!compare->property("hasResult").toBool()) return failWith(tr("the comparison failed: %1").arg(compare->property("status").toString()));
    std::fprintf(stderr, "inferscope: compared with %s\n", qPrintable(compareWith_));
    compared_ = true;
    if (answerAgain_ && !answeredAgain_) return answerAgain();
    // Once the card is laid out with its figures: scrolled into view at the panel's foot.
    QTimer::singleShot(300, this, [this] {
        auto* caption = window_->findChild<QQuickItem*>(QStringLiteral("compareCaption"));
        QQuickItem* view = caption;
        while (view && !view->inherits("QQuickScrollView")) view = view->parentItem();
        if (view) {
            auto* flick = view->property("contentItem").value<QQuickItem*>();
            auto* content = flick ? flick->property("contentItem").value<QQuickItem*>() : nullptr;
            if (content) {
                const double most = std::max(0.0, flick->property("contentHeight").toDouble() - flick->height());
                flick->setProperty("contentY", std::clamp(caption->mapToItem(content, QPointF(0, 0)).y() - 120.0, 0.0, most));
            }
        }
        QTimer::singleShot(400, this, &ScreenshotDriver::capture);
    });
}

void ScreenshotDriver::answerAgain() {
    answeredAgain_ = true;
    sinceFirstToken_.invalidate();  // the wall rate is the new answer's
    inspections_ = 0;
    inspectionUs_ = 0;
    std::fprintf(stderr, "inferscope: answering again\n");
    if (!chat_->regenerate()) failWith(tr("could not answer again: %1").arg(chat_->lastError()));
}

void ScreenshotDriver::capture() {
    if (!window_) return failWith(tr("no window to capture"));
    // An open Layers or Attention panel shows the answer's last token once the engine has looked
    // inside it (a large model's lens takes seconds).
    if (engine_->inspectionPending()) {
        QTimer::singleShot(100, this, &ScreenshotDriver::capture);
        return;
    }
    const QImage image = window_->grabWindow();
    if (image.isNull() || !image.save(output_, "PNG")) return failWith(tr("could not write %1").arg(output_));
    std::fprintf(stderr, "inferscope: screenshot saved to %s (%dx%d)\n", qPrintable(output_), image.width(), image.height());
    emit finished(0);
}

void ScreenshotDriver::failWith(const QString& message) {
    std::fprintf(stderr, "inferscope: --screenshot failed: %s\n", qPrintable(message));
    emit finished(1);
}

}  // namespace inferscope
