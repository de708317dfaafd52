#pragma once
// ScreenshotDriver: the app's --screenshot mode. Once the model has loaded it sends the prompt
// (greedy unless setSampling), waits for the answer to finish, lets the window render, saves the
// window as a PNG and quits — for README pictures and tests. Exit code 0 on success, 1 with a message otherwise.

#include <QElapsedTimer>
#include <QObject>
#include <QString>
#include <QTimer>

class QQuickWindow;

namespace inferscope {

class ChatController;
class EngineController;
class StepInspector;

class ScreenshotDriver : public QObject {
    Q_OBJECT
public:
    ScreenshotDriver(EngineController* engine, ChatController* chat, QString outputPath, QString prompt,
                     QObject* parent = nullptr);
    void setWindow(QQuickWindow* window) { window_ = window; }
    void setTimeoutSeconds(int seconds) { timeout_.setInterval(seconds * 1000); }
    // Opens the model's file dialog once the answer is in and captures it open: the package test
    // runs this in the installed app, so the QML modules only a dialog loads are traced too.
    void setOpenDialog(bool open) { openDialog_ = open; }
    // Once the answer is in, compares it with this GGUF (the Probabilities panel's "Compare
    // with…") and captures the window with the result in view.
    void setCompareWith(const QString& path) { compareWith_ = path; }
    // Once the answer is in (and compared, with setCompareWith), regenerates it once and captures
    // after that: the second answer's rate is the app's with whatever the first left loaded (a
    // comparison's second model, idle: bench/idle_second_model.sh).
    void setAnswerAgain(bool again) { answerAgain_ = again; }
    // Samples at this temperature with this seed instead of answering greedily.
    void setSampling(float temperature, quint64 seed);
    // Once the answer is in, shows its rejected draft (speculative decoding) that came closest to
    // being kept in the Probabilities panel, scrolled to the draft's card.
    void setShowRejectedDraft(StepInspector* inspector) { inspector_ = inspector; }

signals:
    void finished(int exitCode);

private:
    void onModelReady();
    void capture();
    void openDialogThenCapture();
    void compareThenCapture();
    void showComparison(QObject* compare);  // waits for its end, brings the card into view, captures
    void showRejectedDraftThenCapture(int row);
    void scrollIntoView(const QString& objectName);  // the inspector panel holding it, scrolled to it
    void failWith(const QString& message);

    EngineController* engine_;
    ChatController* chat_;
    QQuickWindow* window_ = nullptr;
    QString output_, prompt_, compareWith_;
    StepInspector* inspector_ = nullptr;
    QTimer timeout_;
    bool sent_ = false;
    bool openDialog_ = false;
    bool answerAgain_ = false, answeredAgain_ = false, compared_ = false;
    void answerAgain();
    QElapsedTimer sinceFirstToken_;  // wall time of the decode, as the GUI saw it (bench/gui_vs_cli.sh)
    int inspections_ = 0;            // an open Layers or Attention panel's, while the answer streamed
    qint64 inspectionUs_ = 0;
    qint64 guiCpuAtFirstTokenNs_ = 0;  // this (the GUI) thread's CPU time when the first step arrived
};

}  // namespace inferscope
