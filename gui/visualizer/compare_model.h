#pragma once
// CompareModel: "Compare with…" (issue 30), a second model on an answer. The answer's own tokens
// (its prompt as it was sent, then each step's token) are read by the model that wrote it (A, the
// one loaded) and by another GGUF (B) on the engine's worker — core's compareTeacherForced,
// cancellable, the conversation's model never replaced — and per token KL(P_A ‖ P_B) and the flips
// go to the chat's heat map (tint "compare"), the statistics to `summary`. No figure is computed
// here. GUI thread only.
//
// B with another vocabulary: the answer compared on its text instead (CompareResult::text; the
// summary's onText, bits per byte and the words where they differ most; no tint).
//
// The result belongs to the answer it was made of (its row, version and tokens) and names B's file:
// when that answer is gone (another conversation, a new version shown, the row removed) it is
// cleared, the tint with it.

#include <QObject>
#include <QPointer>
#include <QQmlEngine>
#include <optional>
#include <vector>

#include "chat/chat_controller.h"
#include "engine/compare_jobs.h"
#include "engine/engine_controller.h"
#include "visualizer/compare_values.h"
#include "visualizer/step_values.h"

namespace inferscope {

class CompareModel : public QObject {
    Q_OBJECT
    QML_ELEMENT
    Q_PROPERTY(inferscope::ChatController* chat READ chat WRITE setChat NOTIFY chatChanged)
    // The answer to compare: a row of the chat (the selected one), or -1 for the latest finished answer.
    Q_PROPERTY(int row READ row WRITE setRow NOTIFY rowChanged)
    Q_PROPERTY(bool canRun READ canRun NOTIFY stateChanged)
    Q_PROPERTY(bool running READ running NOTIFY stateChanged)
    Q_PROPERTY(QString status READ status NOTIFY stateChanged)  // what it is doing, why it cannot, or the error
    Q_PROPERTY(QString modelB READ modelB NOTIFY stateChanged)  // the second model chosen last (a path)
    Q_PROPERTY(bool hasResult READ hasResult NOTIFY resultChanged)
    Q_PROPERTY(inferscope::CompareSummary summary READ summary NOTIFY resultChanged)

public:
    explicit CompareModel(QObject* parent = nullptr);
    ~CompareModel() override;

    ChatController* chat() const { return chat_; }
    void setChat(ChatController* chat);
    int row() const { return row_; }
    void setRow(int row);
    bool canRun() const;
    bool running() const { return job_ != 0; }
    QString status() const { return status_; }
    QString modelB() const { return modelB_; }
    bool hasResult() const { return result_.has_value(); }
    CompareSummary summary() const { return summary_; }
    const std::optional<CompareResult>& result() const { return result_; }

    // Reads the answer (row, or the latest) with the loaded model and `pathOrUrl` (a GGUF path or
    // file:// URL) on the worker. false when it cannot start (status says why).
    Q_INVOKABLE bool run(const QString& pathOrUrl);
    Q_INVOKABLE void cancel();
    // Continues the compared answer from its first flip with B's first choice there (a new version
    // of the answer, written by the loaded model): ChatController::branchFrom.
    Q_INVOKABLE bool branchAtFirstFlip();
    // The same branch, but B writes it from there on (the model it was loaded for this comparison;
    // ChatController::branchWithModel): what the other quantization would have said. The new
    // version's origin is B's.
    Q_INVOKABLE bool continueWithB();
    // One token of the compared answer under both models, for the Probabilities panel's side-by-side
    // view ({} unless `row` is the compared answer's): {step, id, kl, flip, pA, pB, dp, topA, topB,
    // candidates: [{id, pA, pB, finalA, finalB, chosen}] (ComparedCandidate; final -1: the answer's
    // sampler settings unknown), b: {candidates (as StepInspector's, without "token"), survivors,
    // rank, pFinal} (B through the answer's sampler stages; absent without its settings)}.
    Q_INVOKABLE QVariantMap tokenAt(int row, int step) const;
    // The row run() would compare: row, or the latest finished answer; -1 when there is none.
    int targetRow() const;

signals:
    void chatChanged();
    void rowChanged();
    void stateChanged();
    void resultChanged();

private:
    void setStatus(const QString& status);
    void onFinished(quint64 jobId, const CompareResult& result);
    void onFailed(quint64 jobId, const QString& message);
    // What identifies an answer: its row, shown version and tokens.
    struct AnswerKey {
        int row = -1;
        int version = 0;
        std::vector<int32_t> tokens;
        bool operator==(const AnswerKey&) const = default;
    };
    std::optional<AnswerKey> keyOf(int row) const;
    void checkStillThere();  // clears the result (and cancels the job) whose answer is gone
    void clearResult();

    QPointer<ChatController> chat_;
    QList<QMetaObject::Connection> connections_;
    int row_ = -1;
    quint64 job_ = 0;
    AnswerKey jobKey_;
    QString modelB_, status_;
    std::optional<CompareResult> result_;
    AnswerKey resultKey_;
    CompareSummary summary_;
};

}  // namespace inferscope
