#pragma once
// SideBySide (issue 30): one prompt to two models at once — the loaded model (A) and a second GGUF
// (B) loaded beside it — streamed into two columns, each with its own figures as the engine
// measured them (time to first token from the click, prefill, decode rate, weights and KV cache in
// memory). When both have ended, each answer is read by the other model too (CompareJob, as
// "Compare with…" reads one): per token KL(P_A ‖ P_B) tints its column, and each column says how
// its answer fares under the other model (mean KL, same top token, both perplexities); with
// vocabularies that differ, on the text (bits per byte, the word gaps as the tint).
//
// Both generations run on the worker (EngineWorker::generatePair), the cores split between them;
// no figure is computed here, the texts are laid out at most once per arriving batch. The prompt is
// the first turn of a new conversation in the chat's template and system prompt; nothing is
// stored. GUI thread only.

#include <QElapsedTimer>
#include <QObject>
#include <QPointer>
#include <QVariantMap>
#include <QtQml/qqmlregistration.h>
#include <optional>
#include <vector>

#include "chat/chat_controller.h"
#include "engine/compare_jobs.h"
#include "engine/engine_controller.h"

namespace inferscope {

class SideBySide : public QObject {
    Q_OBJECT
    QML_ELEMENT
    Q_PROPERTY(inferscope::ChatController* chat READ chat WRITE setChat NOTIFY chatChanged)
    Q_PROPERTY(bool canRun READ canRun NOTIFY stateChanged)
    Q_PROPERTY(bool running READ running NOTIFY stateChanged)     // generating or comparing
    Q_PROPERTY(QString status READ status NOTIFY stateChanged)    // what it does, why it cannot, or the error
    Q_PROPERTY(QString modelB READ modelB NOTIFY stateChanged)    // the second model's path (the last run's)
    // Each column: {name, file, device, html (the answer, tinted once compared), text, tokens,
    // streaming, finish ("" while streaming), error, firstTokenMs (from the click, wall: B's load
    // included), loadMs (B: its load, 0 when kept from an earlier run), prefillMs,
    // prefillTokens, decodeTps (engine), weightBytes, kvBytes, threads, compared (see columnCompared)}.
    Q_PROPERTY(QVariantMap columnA READ columnA NOTIFY columnsChanged)
    Q_PROPERTY(QVariantMap columnB READ columnB NOTIFY columnsChanged)

public:
    explicit SideBySide(QObject* parent = nullptr);
    ~SideBySide() override;

    ChatController* chat() const { return chat_; }
    void setChat(ChatController* chat);
    bool canRun() const;
    bool running() const;
    QString status() const { return status_; }
    QString modelB() const { return modelB_; }
    QVariantMap columnA() const { return column(0); }
    QVariantMap columnB() const { return column(1); }

    // Sends `prompt` to the loaded model and to `pathOrUrl` (a GGUF path or file:// URL) at once.
    // false when it cannot start (status says why).
    Q_INVOKABLE bool run(const QString& prompt, const QString& pathOrUrl);
    Q_INVOKABLE void cancel();

signals:
    void chatChanged();
    void stateChanged();
    void columnsChanged();
    void finished();  // both answers and both comparisons ended (or failed)

private:
    struct Column {
        QPointer<GenerationHandle> handle;
        std::vector<StepRecord> steps;
        std::optional<GenerationSummary> summary;
        std::optional<PrefillStats> prefill;
        LoadedModel model;
        QString error;
        double firstTokenMs = -1;
        double loadMs = 0;  // B: its load before both started (0: kept from an earlier run)
        int threads = 0;
        quint64 compareJob = 0;
        std::optional<CompareResult> compared;
        QString compareError;
        std::vector<float> tint;  // per step: KL(P_A ‖ P_B) in nats, or (onText) the word's gap in bits
        std::vector<uint8_t> flips;
        bool ended() const { return summary.has_value() || !error.isEmpty(); }
    };
    QVariantMap describe(int side) const;
    // A column as QML reads it: described again only after it changed (touch), so a batch of one
    // column's tokens lays out that column's text once, and never the other's.
    QVariantMap column(int side) const;
    void touch(int side);  // -1: both (a new run, the theme)
    mutable QVariantMap described_[2];
    mutable bool fresh_[2] = {false, false};
    QVariantMap describeCompared(const Column& c, int side) const;
    void connectColumn(int side, GenerationHandle* handle);
    void onEnded();  // a generation ended: when both have, the comparisons start
    void compareNext();
    void onCompareFinished(quint64 jobId, const CompareResult& result);
    void onCompareFailed(quint64 jobId, const QString& message);
    void setStatus(const QString& status);
    std::string answerText(const Column& c) const;

    QPointer<ChatController> chat_;
    QList<QMetaObject::Connection> connections_;
    Column columns_[2];
    GenerationJob job_;         // A's job as sent (its chunks: what both read)
    std::string contextText_;   // the prompt as plain text (a comparison on the text reads it first)
    QString modelB_, status_;
    QElapsedTimer clock_;       // from the click
    bool generating_ = false;
    int comparing_ = -1;        // the column whose answer is being compared (-1: none)
    bool trimLeadingSpace_ = false;
};

}  // namespace inferscope
