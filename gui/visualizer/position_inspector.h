#pragma once
// PositionInspector: what the Layers and Attention panels show — the pass that produced the
// token selected in the Probabilities panel (StepInspector's step), looked inside by the engine
// (Engine::inspectPosition on the worker, gui/engine/engine_worker_inspect.cpp): per layer the
// logit lens's top candidates, residual norms and where the final choice settles, and every query
// head's attention weights over the cached positions. Nothing is recomputed here: the figures are
// the engine's PositionInspection as it came.
//
// A panel makes one with `active: visible`: while inactive it asks nothing (a closed panel costs
// nothing). Open, it also has the next answers' first token looked inside as it is computed (its
// pass is the prompt's batched prefill, which a re-run cannot reproduce bit for bit). Active, it asks for the selected step whenever the selection changes (at most ten times
// a second while following a stream: StepInspector's pace), one request at a time (a newer one
// replaces one that has not started). When the cache no longer holds that token's context
// (another conversation was answered since, the model was reloaded) it says so and shows nothing.
// GUI thread only.

#include <QAbstractListModel>
#include <QObject>
#include <QPointer>
#include <QQmlEngine>
#include <memory>

#include "engine/engine_controller.h"
#include "visualizer/step_inspector.h"

namespace inferscope {

// The lens, one row per layer, updated in place (the delegates stay while a stream is followed).
class LensLayerModel : public QAbstractListModel {
    Q_OBJECT
    QML_ELEMENT
    QML_UNCREATABLE("owned by PositionInspector")
    Q_PROPERTY(int count READ rowCount NOTIFY countChanged)
    // The largest residual norm of the rows (the norm bars scale to it), worked out once per update
    // here: the panel's own loop over its rows ran again for each row's change, twelve times twelve.
    Q_PROPERTY(double maxResidualNorm READ maxResidualNorm NOTIFY maxResidualNormChanged)
public:
    enum Role { LayerRole = Qt::UserRole + 1, CandidatesRole, ResidualNormRole, EntropyRole, TopIsFinalRole, FirstTop1Role, SettledRole };
    struct Row {
        int layer = 0;
        QVariantList candidates;  // [{id, token, p, final}] descending
        double residualNorm = 0, entropyBits = 0;
        bool topIsFinal = false, firstTop1 = false, settled = false;
    };
    using QAbstractListModel::QAbstractListModel;
    int rowCount(const QModelIndex& parent = {}) const override { return parent.isValid() ? 0 : int(rows_.size()); }
    QVariant data(const QModelIndex& index, int role) const override;
    QHash<int, QByteArray> roleNames() const override;
    void set(QList<Row> rows);
    double maxResidualNorm() const { return maxNorm_; }
signals:
    void countChanged();
    void maxResidualNormChanged();
private:
    QList<Row> rows_;
    double maxNorm_ = 0;
};

class PositionInspector : public QObject {
    Q_OBJECT
    QML_ELEMENT
    Q_PROPERTY(inferscope::EngineController* engine READ engine WRITE setEngine NOTIFY configChanged)
    Q_PROPERTY(inferscope::StepInspector* steps READ steps WRITE setSteps NOTIFY configChanged)
    Q_PROPERTY(bool active READ active WRITE setActive NOTIFY configChanged)
    Q_PROPERTY(bool lens MEMBER lens_ NOTIFY configChanged)            // ask for the logit lens
    Q_PROPERTY(bool attention MEMBER attention_ NOTIFY configChanged)  // ask for the attention weights
    // "none" (no token selected), "waiting", "ready", "notCached", "error"
    Q_PROPERTY(QString status READ status NOTIFY changed)
    Q_PROPERTY(QString message READ message NOTIFY changed)   // what to tell the user when not "ready"
    Q_PROPERTY(bool hasResult READ hasResult NOTIFY changed)
    Q_PROPERTY(int step READ shownStep NOTIFY changed)        // the answer's step shown (0-based)
    Q_PROPERTY(int position READ position NOTIFY changed)     // the pass's position (the step's token is at position + 1)
    Q_PROPERTY(QString inputToken READ inputToken NOTIFY changed)   // the token run at that position
    Q_PROPERTY(QString chosenToken READ chosenToken NOTIFY changed) // the selected (generated) token
    Q_PROPERTY(bool rerunAfterPrefill READ rerunAfterPrefill NOTIFY changed)  // step 0: re-run of a batched prefill's pass
    Q_PROPERTY(double computeMs READ computeMs NOTIFY changed)
    Q_PROPERTY(inferscope::LensLayerModel* layers READ layerModel CONSTANT)
    Q_PROPERTY(int firstTop1Layer READ firstTop1Layer NOTIFY changed)
    Q_PROPERTY(int settledLayer READ settledLayer NOTIFY changed)
    Q_PROPERTY(int layerCount READ layerCount NOTIFY changed)
    Q_PROPERTY(int headCount READ headCount NOTIFY changed)
    Q_PROPERTY(int kvHeadCount READ kvHeadCount NOTIFY changed)
    Q_PROPERTY(int keyCount READ keyCount NOTIFY changed)
    Q_PROPERTY(int requests READ requests NOTIFY changed)     // sent to the engine so far (tests: closed panels ask nothing)

public:
    explicit PositionInspector(QObject* parent = nullptr);
    ~PositionInspector() override;

    EngineController* engine() const { return engine_; }
    void setEngine(EngineController* engine);
    StepInspector* steps() const { return steps_; }
    void setSteps(StepInspector* steps);
    bool active() const { return active_; }
    void setActive(bool on);

    QString status() const { return status_; }
    QString message() const { return message_; }
    bool hasResult() const { return shown_ != nullptr; }
    int shownStep() const { return shownStep_; }
    int position() const { return shown_ ? shown_->position : -1; }
    QString inputToken() const;
    QString chosenToken() const { return chosenToken_; }
    bool rerunAfterPrefill() const { return shown_ && shownStep_ == 0 && shown_->rerun; }
    double computeMs() const { return shown_ ? double(shown_->us) / 1000.0 : 0.0; }
    LensLayerModel* layerModel() { return &layers_; }
    int firstTop1Layer() const { return shown_ ? shown_->lens.firstTop1Layer : -1; }
    int settledLayer() const { return shown_ ? shown_->lens.settledLayer : -1; }
    int layerCount() const { return shown_ ? shown_->attention.nLayer : 0; }
    int headCount() const { return shown_ ? shown_->attention.nHead : 0; }
    int kvHeadCount() const { return shown_ ? shown_->attention.nHeadKv : 0; }
    int keyCount() const { return shown_ ? shown_->attention.nKeys : 0; }
    int requests() const { return requests_; }
    const PositionInspection* inspection() const { return shown_.get(); }

    // The token at a cached position of the shown context, as the panels print it.
    Q_INVOKABLE QString tokenAt(int position) const;
    // Is the token at `position` a generated one (it can be selected)? Selects it in the
    // Probabilities panel (and so here); false for prompt tokens.
    Q_INVOKABLE bool selectPosition(int position);
    Q_INVOKABLE bool generatedAt(int position) const;
    // The sliding window of a layer (0: the layer attends to every cached position).
    Q_INVOKABLE int windowOf(int layer) const;
    // The KV head a query head reads (heads sharing one form a GQA group).
    Q_INVOKABLE int kvHeadOf(int head) const;
    // One layer's weights for one head (what the heat-map paints), as the engine returned them.
    Q_INVOKABLE QList<qreal> attentionRow(int layer, int head) const;

signals:
    void configChanged();
    void changed();

private:
    void refresh();  // the selection changed, or the panel opened
    void onReply(const InspectionReply& reply);
    void setStatus(const QString& status, const QString& message);
    void show(std::shared_ptr<const PositionInspection> inspection, int row, int step, std::vector<int32_t> context);
    void rebuildLayers();
    void updateCapture();  // what the engine captures of the next answer's first step (open: lens / attention)
    void onPromptPrepared(quint64 jobId, const QList<QList<int>>& chunkTokens);
    void onSteps(quint64 jobId, const StepBatch& batch);
    bool showCapturedFirstStep(int row, const StepRecord& rec, const std::vector<int32_t>& context);
    std::pair<int, int> stepAt(int position) const;  // the answer row and step of a generated token, or -1s

    QPointer<EngineController> engine_;
    QPointer<StepInspector> steps_;
    QList<QMetaObject::Connection> connections_;
    bool active_ = false;
    bool lens_ = true, attention_ = false;
    QString status_ = QStringLiteral("none"), message_;
    // What is asked (the selection) and what is shown (the engine's answer).
    quint64 pendingId_ = 0;
    int pendingRow_ = -1, pendingStep_ = -1;
    std::vector<int32_t> pendingContext_;
    std::shared_ptr<const PositionInspection> shown_;
    std::vector<int32_t> shownContext_;  // tokens 0..position, then the chosen one
    int shownRow_ = -1, shownStep_ = -1;
    QString chosenToken_;
    LensLayerModel layers_;
    int requests_ = 0;
    // The latest answer's first step as captured inside its prefill (GenerationJob::inspect), with
    // the prompt it ran on: shown instead of a re-run when that token is selected.
    quint64 promptJob_ = 0;
    std::vector<int32_t> jobPrompt_;
    struct Captured {
        std::shared_ptr<const PositionInspection> inspection;
        std::vector<int32_t> prompt;
        int32_t chosen = -1;
    } captured_;
};

}  // namespace inferscope
