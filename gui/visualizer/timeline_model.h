#pragma once
// TimelineModel: what the Timeline panel shows for an answer — prefill as one block, each decode
// step's time, time to first token, and what those times achieved (GB/s of weights and KV cache
// read per decode step, GFLOP/s in prefill) against this machine's measured limits. It also runs
// two experiments on the engine: the same prompt without the KV cache (every step recomputes the
// whole sequence), and a prefill sweep (prompt lengths doubling) that shows attention's quadratic
// cost on long prompts. GUI thread; the experiments run on the engine's worker like any answer.

#include <QHash>
#include <QObject>
#include <QPointer>
#include <QQmlEngine>
#include <QVariantList>
#include <QVariantMap>
#include <vector>

#include <optional>

#include "engine/engine_types.h"
#include "engine/inference_backend.h"
#include "app/qml_singleton.h"

namespace inferscope {

class ChatController;
struct ChatMessage;
class EngineController;
class StepInspector;

class TimelineModel : public QObject, public QmlSingleton<TimelineModel> {
    Q_OBJECT
    QML_ELEMENT
    QML_SINGLETON
    // The Timeline panel is on screen. While it is not, the shown answer's figures wait: ten
    // rebuilds a second of a hidden panel's charts cost a fast model's decode on two cores. Shown
    // again, they are brought up to date at once. True when nothing says otherwise.
    Q_PROPERTY(bool active READ active WRITE setActive NOTIFY activeChanged)
    Q_PROPERTY(int row READ row NOTIFY changed)                          // the answer shown, -1: none
    Q_PROPERTY(QVariantMap prefill READ prefill NOTIFY changed)          // tokens, reused, ms, tokensPerSecond, gflops
    Q_PROPERTY(QList<qreal> decodeMs READ decodeMs NOTIFY changed)       // per decode pass
    Q_PROPERTY(QList<qreal> decodeGBps READ decodeGBps NOTIFY changed)   // bytes read / time, per pass
    Q_PROPERTY(QVariantMap decode READ decode NOTIFY changed)            // passes, medianMs, tokensPerSecond, medianGBps, gflops
    Q_PROPERTY(double timeToFirstTokenMs READ timeToFirstTokenMs NOTIFY changed)
    // The shown answer's origin, not the engine's now: a server's answer was timed by this client
    // over the network; a local one by the engine. `costKnown`: the loaded model made it, so its
    // shape gives the bytes and FLOPs behind GB/s and GFLOP/s (another model's would be wrong).
    Q_PROPERTY(bool remote READ remote NOTIFY changed)
    Q_PROPERTY(bool costKnown READ costKnown NOTIFY changed)
    Q_PROPERTY(QString answerModel READ answerModel NOTIFY changed)
    Q_PROPERTY(QVariantMap machine READ machine NOTIFY machineChanged)   // bandwidthGBps, peakGflops, precision, measured
    Q_PROPERTY(bool busy READ busy NOTIFY busyChanged)                   // an experiment is running
    Q_PROPERTY(QString status READ status NOTIFY busyChanged)
    Q_PROPERTY(bool measuring READ measuring NOTIFY busyChanged)         // measureMachine() is under way
    Q_PROPERTY(QList<qreal> noCacheMs READ noCacheMs NOTIFY experimentsChanged)
    Q_PROPERTY(QVariantMap counters READ counters NOTIFY experimentsChanged)  // with / without the cache
    Q_PROPERTY(QVariantList sweep READ sweep NOTIFY experimentsChanged)       // [{tokens, ms, msPerToken}]
    // A speculative answer once complete (empty otherwise, and while it streams): its rounds, verify
    // batches and acceptance by draft position (visualizer/draft_timeline.h), plus tokensPerSecond
    // (the answer's), baseline ({tokensPerSecond, tokens, source}: plain decoding on the same model,
    // measured this session; absent: not measured yet) and speedup (the answer's over the baseline's).
    Q_PROPERTY(QVariantMap speculative READ speculative NOTIFY changed)

public:
    TimelineModel(ChatController* chat, StepInspector* inspector, QObject* parent);

    bool active() const { return active_; }
    void setActive(bool on);
    int row() const { return row_; }
    QVariantMap prefill() const { return prefill_; }
    QList<qreal> decodeMs() const { return decodeMs_; }
    QList<qreal> decodeGBps() const { return decodeGBps_; }
    QVariantMap decode() const { return decode_; }
    double timeToFirstTokenMs() const { return ttftMs_; }
    bool remote() const { return remote_; }
    bool costKnown() const { return costKnown_; }
    QString answerModel() const { return answerModel_; }
    QVariantMap machine() const { return machine_; }
    bool busy() const { return experiment_ != Experiment::None; }
    QString status() const { return status_; }
    bool measuring() const { return measuring_; }
    QList<qreal> noCacheMs() const { return noCacheMs_; }
    QVariantMap counters() const { return counters_; }
    QVariantList sweep() const { return sweep_; }
    QVariantMap speculative() const { return speculative_; }

    // Reruns the shown answer's prompt and length without the KV cache.
    Q_INVOKABLE bool runWithoutCache();
    // Prefill time for prompts of 8, 16, 32, ... tokens up to the context (at most 2048).
    Q_INVOKABLE bool runPrefillSweep();
    // Decodes the shown answer's prompt again, as long, with its sampler but no drafts: the plain
    // decoding rate its speed-up is measured against.
    Q_INVOKABLE bool runWithoutDrafts();
    Q_INVOKABLE void cancelExperiment();
    // The machine's limits, measured on the engine thread (also done after each model load).
    Q_INVOKABLE void measureMachine();

    // Figures of one decode pass at position p (0-based) and of a prefill of n tokens after
    // `reused` cached ones, from the model's shape: what the engine reads and computes.
    double decodeBytes(int position) const;
    double prefillFlops(int tokens, int reused) const;
    double decodeFlops(int position) const;

signals:
    void activeChanged();
    void changed();
    void machineChanged();
    void busyChanged();
    void experimentsChanged();

private:
    enum class Experiment { None, NoCache, Sweep, Plain };
    void recompute();
    void recomputeSpeculative(const ChatMessage& answer, const QString& model);
    void notePlainAnswer(int row);  // a plain local answer's decode rate, the baseline of its model
    bool startJob(GenerationJob job);  // job_, with its handle's signals connected
    void onFinished(const GenerationSummary& summary);
    void onFailed(const QString& message);
    void onSteps(const StepBatch& batch);
    bool startSweepJob();
    std::vector<int32_t> contextTokens(int row) const;
    // A measurement that decodes answer `a` (the selected row's) again from an empty cache: its
    // context, its sampler settings (greedy when not stored) and length; none without a context.
    std::optional<GenerationJob> rerunOf(const ChatMessage& a) const;
    void setStatus(const QString& status);

    ChatController* chat_;
    EngineController* engine_;
    StepInspector* inspector_;
    bool active_ = true;
    bool behind_ = false;  // inactive, and the figures changed since the last recompute
    int row_ = -1;
    QVariantMap prefill_, decode_, machine_, counters_;
    QList<qreal> decodeMs_, decodeGBps_, noCacheMs_;
    double ttftMs_ = 0;
    bool remote_ = false;
    bool costKnown_ = false;
    QString answerModel_;
    QVariantList sweep_;
    QVariantMap speculative_;
    QHash<QString, QVariantMap> plainBaselines_;  // by model (ChatController::originLabel): this session's
    QString plainModel_;                          // the model runWithoutDrafts() measures
    Experiment experiment_ = Experiment::None;
    bool measuring_ = false;
    void forgetExperiments();
    QPointer<GenerationHandle> job_;  // the experiment's running job
    std::vector<int> sweepLengths_;
    size_t sweepIndex_ = 0;
    std::vector<int32_t> sweepTokens_;
    QString status_;
};

}  // namespace inferscope
