#include "visualizer/position_inspector.h"

#include <algorithm>

#include "chat/chat_controller.h"

namespace inferscope {

// ---- LensLayerModel -----------------------------------------------------------------------------

QVariant LensLayerModel::data(const QModelIndex& index, int role) const {
    if (!index.isValid() || index.row() >= rows_.size()) return {};
    const Row& r = rows_[index.row()];
    switch (role) {
    case LayerRole: return r.layer;
    case CandidatesRole: return r.candidates;
    case ResidualNormRole: return r.residualNorm;
    case EntropyRole: return r.entropyBits;
    case TopIsFinalRole: return r.topIsFinal;
    case FirstTop1Role: return r.firstTop1;
    case SettledRole: return r.settled;
    default: return {};
    }
}

QHash<int, QByteArray> LensLayerModel::roleNames() const {
    return {{LayerRole, "layerIndex"}, {CandidatesRole, "candidates"}, {ResidualNormRole, "residualNorm"}, {EntropyRole, "entropyBits"},
            {TopIsFinalRole, "topIsFinal"}, {FirstTop1Role, "firstTop1"}, {SettledRole, "settled"}};
}

void LensLayerModel::set(QList<Row> rows) {
    double maxNorm = 0;
    for (const Row& r : rows) maxNorm = std::max(maxNorm, r.residualNorm);
    // The scale first: the rows' bars read it when their own norms change.
    if (maxNorm != maxNorm_) {
        maxNorm_ = maxNorm;
        emit maxResidualNormChanged();
    }
    if (rows.size() == rows_.size()) {
        rows_ = std::move(rows);
        if (!rows_.isEmpty()) emit dataChanged(index(0), index(int(rows_.size()) - 1));
        return;
    }
    beginResetModel();
    rows_ = std::move(rows);
    endResetModel();
    emit countChanged();
}

// ---- PositionInspector --------------------------------------------------------------------------

PositionInspector::PositionInspector(QObject* parent) : QObject(parent) {
    connect(this, &PositionInspector::configChanged, this, &PositionInspector::updateCapture);
}

PositionInspector::~PositionInspector() {
    if (engine_) engine_->setFirstStepCapture(this, false, false);
}

void PositionInspector::updateCapture() {
    if (engine_) engine_->setFirstStepCapture(this, active_ && lens_, active_ && attention_);
}

void PositionInspector::onPromptPrepared(quint64 jobId, const QList<QList<int>>& chunkTokens) {
    promptJob_ = jobId;
    jobPrompt_.clear();
    for (const auto& chunk : chunkTokens) jobPrompt_.insert(jobPrompt_.end(), chunk.begin(), chunk.end());
}

void PositionInspector::onSteps(quint64 jobId, const StepBatch& batch) {
    for (const StepRecord& rec : batch.steps) {
        if (rec.step != 0 || !rec.inspection || jobId != promptJob_) continue;
        captured_ = Captured{rec.inspection, jobPrompt_, rec.sample.id};
        refresh();  // the selection may be this token already (following the stream)
    }
}

bool PositionInspector::showCapturedFirstStep(int row, const StepRecord& rec, const std::vector<int32_t>& context) {
    const auto& in = captured_.inspection;
    if (!in || captured_.chosen != rec.sample.id || captured_.prompt != context || in->position != rec.position - 1) return false;
    if ((lens_ && in->lens.layers.empty()) || (attention_ && in->attention.weights.empty())) return false;
    pendingId_ = 0;
    if (shown_ != in) {
        std::vector<int32_t> withChosen = context;
        withChosen.push_back(rec.sample.id);
        show(in, row, 0, std::move(withChosen));
    }
    setStatus(QStringLiteral("ready"), QString());
    return true;
}

void PositionInspector::setEngine(EngineController* engine) {
    if (engine_ == engine) return;
    if (engine_) {
        engine_->setFirstStepCapture(this, false, false);
        disconnect(engine_, nullptr, this, nullptr);
    }
    engine_ = engine;
    if (engine_) {
        connect(engine_, &EngineController::inspectionArrived, this, &PositionInspector::onReply);
        connect(engine_, &EngineController::promptPrepared, this, &PositionInspector::onPromptPrepared);
        connect(engine_, &EngineController::stepsArrived, this, &PositionInspector::onSteps);
        // Another model: positions, tokens and layers all mean something else.
        connect(engine_, &EngineController::modelChanged, this, [this] {
            captured_ = {};
            show(nullptr, -1, -1, {});
            pendingId_ = 0;
            refresh();
        });
    }
    emit configChanged();
    refresh();
}

void PositionInspector::setSteps(StepInspector* steps) {
    if (steps_ == steps) return;
    if (steps_) disconnect(steps_, nullptr, this, nullptr);
    steps_ = steps;
    if (steps_) connect(steps_, &StepInspector::selectionChanged, this, &PositionInspector::refresh);
    emit configChanged();
    refresh();
}

void PositionInspector::setActive(bool on) {
    if (active_ == on) return;
    active_ = on;
    emit configChanged();
    refresh();
}

void PositionInspector::setStatus(const QString& status, const QString& message) {
    if (status == status_ && message == message_) return;
    status_ = status;
    message_ = message;
    emit changed();
}

void PositionInspector::refresh() {
    if (!active_ || !engine_ || !steps_) return;
    const int row = steps_->row(), step = steps_->step();
    const ChatModel* m = steps_->chat()->messages();
    if (row < 0 || row >= m->count() || step < 0 || step >= int(m->at(row).steps.size())) {
        show(nullptr, -1, -1, {});
        pendingId_ = 0;
        return setStatus(QStringLiteral("none"), tr("No token selected yet: send a prompt, or click a token of an answer."));
    }
    const ChatMessage& msg = m->at(row);
    const StepRecord& rec = msg.steps[size_t(step)];
    // Another file wrote this answer (the comparison's second model, or a model loaded before):
    // the loaded model's pass would show what it computes, not what chose these tokens.
    const AnswerOrigin& origin = msg.origin;
    if (!origin.remote() && !origin.modelFile.empty() && origin.modelFile != engine_->modelPath().toStdString()) {
        show(nullptr, -1, -1, {});
        pendingId_ = 0;
        return setStatus(QStringLiteral("notCached"),
                         tr("This answer was written by %1, not the loaded model: load it to look inside its passes.")
                             .arg(ChatController::originLabel(origin)));
    }
    // The pass that chose this token ran the token before it, at position - 1, over everything before.
    std::vector<int32_t> context = steps_->contextBefore(row);
    for (int k = 0; k < step; ++k) context.push_back(msg.steps[size_t(k)].sample.id);
    if (rec.position < 1 || int(context.size()) != rec.position) {
        show(nullptr, -1, -1, {});
        pendingId_ = 0;
        return setStatus(QStringLiteral("notCached"),
                         tr("The tokens before this one are no longer known exactly (the model, template or mode changed since it was "
                            "written), so its pass cannot be run again. Send a new message to look inside new tokens."));
    }
    if (step == 0 && showCapturedFirstStep(row, rec, context)) return;
    const bool same = row == shownRow_ && step == shownStep_ && shown_ && shownContext_.size() == context.size() + 1 &&
                      std::equal(context.begin(), context.end(), shownContext_.begin()) &&
                      (!lens_ || !shown_->lens.layers.empty()) && (!attention_ || !shown_->attention.weights.empty());
    if (same) return setStatus(QStringLiteral("ready"), QString());
    if (pendingId_ != 0 && row == pendingRow_ && step == pendingStep_ && context == pendingContext_) return;  // asked already
    InspectionRequest request;
    request.position = rec.position - 1;
    request.context = context;
    request.options = InspectOptions{lens_, attention_, 5};
    request.follow = steps_->following() && msg.streaming;
    pendingRow_ = row;
    pendingStep_ = step;
    pendingContext_ = std::move(context);
    pendingId_ = engine_->requestInspection(std::move(request));
    ++requests_;
    setStatus(QStringLiteral("waiting"), tr("Running token %1's pass again with the layers and heads recorded…").arg(step + 1));
}

void PositionInspector::onReply(const InspectionReply& reply) {
    if (reply.id != pendingId_) return;  // superseded by a later selection
    pendingId_ = 0;
    if (reply.notCached) {
        show(nullptr, -1, -1, {});
        return setStatus(QStringLiteral("notCached"),
                         tr("This token is no longer in the KV cache: another conversation or answer has been computed since. Its "
                            "pass can only be run again over the context it was written in; regenerate or continue this "
                            "conversation to look inside it."));
    }
    if (!reply.inspection) {
        show(nullptr, -1, -1, {});
        return setStatus(QStringLiteral("error"), QString::fromStdString(reply.error));
    }
    std::vector<int32_t> context = std::move(pendingContext_);
    const ChatModel* m = steps_ ? steps_->chat()->messages() : nullptr;
    if (m && pendingRow_ < m->count() && pendingStep_ < int(m->at(pendingRow_).steps.size()))
        context.push_back(m->at(pendingRow_).steps[size_t(pendingStep_)].sample.id);
    show(reply.inspection, pendingRow_, pendingStep_, std::move(context));
    setStatus(QStringLiteral("ready"), QString());
    refresh();  // the selection may have moved on while the engine worked
}

void PositionInspector::show(std::shared_ptr<const PositionInspection> inspection, int row, int step, std::vector<int32_t> context) {
    if (!inspection && !shown_) return;
    shown_ = std::move(inspection);
    shownRow_ = row;
    shownStep_ = step;
    shownContext_ = std::move(context);
    chosenToken_ = shown_ && steps_ && !shownContext_.empty() ? steps_->liveTokenText(shownContext_.back()) : QString();
    rebuildLayers();
    emit changed();
}

void PositionInspector::rebuildLayers() {
    QList<LensLayerModel::Row> rows;
    if (shown_ && !shown_->lens.layers.empty()) {
        const LogitLens& lens = shown_->lens;
        const int32_t finalTop = lens.layers.back().top.empty() ? -1 : lens.layers.back().top.front().id;
        const int32_t chosen = shownContext_.empty() ? -1 : shownContext_.back();
        for (size_t l = 0; l < lens.layers.size(); ++l) {
            const LensLayer& layer = lens.layers[l];
            LensLayerModel::Row r;
            r.layer = int(l);
            for (const LensCandidate& c : layer.top)
                r.candidates.append(QVariantMap{{"id", c.id}, {"token", steps_->liveTokenText(c.id)}, {"p", double(c.p)},
                                                {"logit", double(c.logit)}, {"final", c.id == finalTop}, {"chosen", c.id == chosen}});
            r.residualNorm = layer.residualNorm;
            r.entropyBits = layer.entropyBits;
            r.topIsFinal = !layer.top.empty() && layer.top.front().id == finalTop;
            r.firstTop1 = int32_t(l) == lens.firstTop1Layer;
            r.settled = int32_t(l) == lens.settledLayer;
            rows.append(std::move(r));
        }
    }
    layers_.set(std::move(rows));
}

QString PositionInspector::inputToken() const { return shown_ ? tokenAt(shown_->position) : QString(); }

QString PositionInspector::tokenAt(int position) const {
    if (!steps_ || position < 0 || position >= int(shownContext_.size())) return {};
    return steps_->liveTokenText(shownContext_[size_t(position)]);
}

std::pair<int, int> PositionInspector::stepAt(int position) const {
    if (!steps_ || shownRow_ < 0) return {-1, -1};
    const ChatModel* m = steps_->chat()->messages();
    if (shownRow_ >= m->count()) return {-1, -1};
    // The answer shown, or an earlier one of the same context.
    for (int row = shownRow_; row >= 0; --row) {
        const auto& steps = m->at(row).steps;
        if (m->at(row).role != Message::Assistant || steps.empty() || position < steps.front().position) continue;
        const size_t k = size_t(position - steps.front().position);
        if (k < steps.size() && steps[k].position == position) return {row, int(k)};
        return {-1, -1};  // a prompt token between answers
    }
    return {-1, -1};
}

bool PositionInspector::generatedAt(int position) const { return stepAt(position).first >= 0; }

bool PositionInspector::selectPosition(int position) {
    const auto [row, step] = stepAt(position);
    if (row < 0) return false;
    steps_->select(row, step);
    return true;
}

int PositionInspector::windowOf(int layer) const {
    if (!shown_ || layer < 0 || layer >= int(shown_->attention.window.size())) return 0;
    return shown_->attention.window[size_t(layer)];
}

int PositionInspector::kvHeadOf(int head) const {
    if (!shown_ || shown_->attention.nHeadKv <= 0) return 0;
    return shown_->attention.kvHeadOf(head);
}

QList<qreal> PositionInspector::attentionRow(int layer, int head) const {
    QList<qreal> out;
    if (!shown_ || layer < 0 || layer >= shown_->attention.nLayer || head < 0 || head >= shown_->attention.nHead) return out;
    for (float w : shown_->attention.row(layer, head)) out.append(double(w));
    return out;
}

}  // namespace inferscope
