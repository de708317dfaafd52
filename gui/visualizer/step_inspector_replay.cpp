// StepInspector, the replay: the answer's sampler run again with other settings on the logits
// each step kept (core/sampler/replay.h), recomputed after each change once the settings rest.
#include "visualizer/step_inspector.h"

#include "chat/chat_controller.h"
#include "remote/remote_vocabulary.h"

namespace inferscope {

std::vector<int32_t> StepInspector::contextBefore(int row) const {
    std::vector<int32_t> context;
    const ChatModel* m = chat_->messages();
    for (int r = 0; r < row && r < m->count(); ++r) context.insert(context.end(), m->at(r).tokens.begin(), m->at(r).tokens.end());
    return context;
}

bool StepInspector::replayAvailable() const {
    const auto* steps = answerSteps();
    return steps && !steps->empty() && !(*steps)[0].replayIds.empty() && !chat_->messages()->at(row_).streaming;
}

QString StepInspector::replayNote() const {
    if (replayAvailable()) return {};
    const auto* steps = answerSteps();
    if (!steps) return tr("No answer yet: every step's logits are kept, so the sampler can run again on them once one has finished.");
    if (chat_->messages()->at(row_).streaming) return tr("Available once this answer has finished: every step's logits are kept, so the sampler can run again on them.");
    if (steps->empty()) return tr("This answer has no tokens to replay.");
    if ((*steps)[0].sample.id >= RemoteVocabulary::kFirstId)  // a server's token (remote_vocabulary.h)
        return tr("This answer came from a server, which sends each token's most likely alternatives, not the logits a replay needs.");
    return tr("This answer was stored without its logits (by an earlier version of Inferscope), so it cannot be replayed.");
}

void StepInspector::resetReplayToAnswer() {
    const ChatModel* m = chat_->messages();
    if (row_ >= 0 && row_ < m->count()) {
        // The answer's own settings (an answer stored without them keeps the current ones).
        if (const auto& sampler = m->at(row_).stats.sampler) replay_ = *sampler;
    }
    replay_.topN = 20;
    emit replayChanged();
    scheduleReplay();
}

#define REPLAY_SETTER(name, field, type, cast)  \
    void StepInspector::name(type v) {          \
        if (field == cast(v)) return;           \
        field = cast(v);                        \
        emit replayChanged();                   \
        scheduleReplay();                       \
    }
REPLAY_SETTER(setReplayTemperature, replay_.temperature, double, float)
REPLAY_SETTER(setReplayTopK, replay_.topK, int, int32_t)
REPLAY_SETTER(setReplayTopP, replay_.topP, double, float)
REPLAY_SETTER(setReplayMinP, replay_.minP, double, float)
REPLAY_SETTER(setReplayRepeatPenalty, replay_.repeatPenalty, double, float)
#undef REPLAY_SETTER

void StepInspector::scheduleReplay() { replayPace_.runAfter(kReplayMs); }

void StepInspector::runReplay() {
    result_.reset();
    replayedStep_.reset();
    replayError_.clear();
    if (replayAvailable()) {
        const auto& steps = *answerSteps();
        const auto context = contextBefore(row_);
        auto result = replaySteps(steps, context, replay_);
        if (!result) {
            replayError_ = QString::fromStdString(result.error().message);
        } else {
            std::vector<uint8_t> changed(result->steps.size());
            for (size_t k = 0; k < changed.size(); ++k) changed[k] = result->steps[k].changed ? 1 : 0;
            chat_->messages()->setReplayChanged(row_, std::move(changed));
            result_ = std::move(*result);
            if (stepRecord()) {
                auto one = replayOneStep(steps, size_t(step_), context, replay_);
                if (one) replayedStep_ = std::move(*one);
            }
        }
    }
    emit replayResultChanged();
}

QVariantMap StepInspector::replayCurrent() const {
    if (!replayedStep_ || !result_ || step_ < 0 || step_ >= int(result_->steps.size())) return {};
    const ReplayedStep& r = result_->steps[size_t(step_)];
    return {{"id", replayedStep_->id}, {"token", tokenText(replayedStep_->id)}, {"pFinal", double(replayedStep_->pFinal)},
            {"changed", r.changed}, {"exact", r.exact}, {"storedMass", double(r.storedMass)}};
}

QVariantList StepInspector::replayCandidates() const {
    QVariantList out;
    if (!replayedStep_) return out;
    for (const CandidateRecord& c : replayedStep_->top) out.append(candidateMap(c, replayedStep_->id));
    return out;
}

}  // namespace inferscope
