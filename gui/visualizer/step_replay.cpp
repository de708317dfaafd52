#include "visualizer/step_replay.h"

#include "chat/chat_controller.h"
#include "remote/remote_vocabulary.h"
#include "visualizer/step_inspector.h"

namespace inferscope {

StepReplay::StepReplay(StepInspector& inspector) : QObject(&inspector), inspector_(inspector) {
    // Whether the selected answer can be replayed changes with the selection and with its stream.
    connect(&inspector, &StepInspector::selectionChanged, this, &StepReplay::availabilityChanged);
}

void StepReplay::followStep() {
    if (replayedStep_ || result_) schedule();
}

bool StepReplay::available() const {
    const auto* steps = inspector_.answerSteps();
    return steps && !steps->empty() && !(*steps)[0].replayIds.empty() && !inspector_.chat()->messages()->at(inspector_.row()).streaming;
}

QString StepReplay::note() const {
    if (available()) return {};
    const auto* steps = inspector_.answerSteps();
    if (!steps) return tr("No answer yet: every step's logits are kept, so the sampler can run again on them once one has finished.");
    if (inspector_.chat()->messages()->at(inspector_.row()).streaming) return tr("Available once this answer has finished: every step's logits are kept, so the sampler can run again on them.");
    if (steps->empty()) return tr("This answer has no tokens to replay.");
    if ((*steps)[0].sample.id >= RemoteVocabulary::kFirstId)  // a server's token (remote_vocabulary.h)
        return tr("This answer came from a server, which sends each token's most likely alternatives, not the logits a replay needs.");
    return tr("This answer was stored without its logits (by an earlier version of Inferscope), so it cannot be replayed.");
}

void StepReplay::resetToAnswer() {
    const ChatModel* m = inspector_.chat()->messages();
    if (inspector_.row() >= 0 && inspector_.row() < m->count()) {
        // The answer's own settings (an answer stored without them keeps the current ones).
        if (const auto& sampler = m->at(inspector_.row()).stats.sampler) settings_ = *sampler;
    }
    settings_.topN = 20;
    emit settingsChanged();
    schedule();
}

#define REPLAY_SETTER(name, field, type, cast)  \
    void StepReplay::name(type v) {          \
        if (field == cast(v)) return;           \
        field = cast(v);                        \
        emit settingsChanged();                   \
        schedule();                       \
    }
REPLAY_SETTER(setTemperature, settings_.temperature, double, float)
REPLAY_SETTER(setTopK, settings_.topK, int, int32_t)
REPLAY_SETTER(setTopP, settings_.topP, double, float)
REPLAY_SETTER(setMinP, settings_.minP, double, float)
REPLAY_SETTER(setRepeatPenalty, settings_.repeatPenalty, double, float)
#undef REPLAY_SETTER

void StepReplay::schedule() { pace_.runAfter(kReplayMs); }

void StepReplay::run() {
    result_.reset();
    replayedStep_.reset();
    error_.clear();
    if (available()) {
        const auto& steps = *inspector_.answerSteps();
        const auto context = inspector_.contextBefore(inspector_.row());
        auto result = replaySteps(steps, context, settings_);
        if (!result) {
            error_ = QString::fromStdString(result.error().message);
        } else {
            std::vector<uint8_t> changed(result->steps.size());
            for (size_t k = 0; k < changed.size(); ++k) changed[k] = result->steps[k].changed ? 1 : 0;
            inspector_.chat()->messages()->setReplayChanged(inspector_.row(), std::move(changed));
            result_ = std::move(*result);
            if (inspector_.hasStep()) {
                auto one = replayOneStep(steps, size_t(inspector_.step()), context, settings_);
                if (one) replayedStep_ = std::move(*one);
            }
        }
    }
    emit resultChanged();
}

QVariantMap StepReplay::current() const {
    if (!replayedStep_ || !result_ || inspector_.step() < 0 || inspector_.step() >= int(result_->steps.size())) return {};
    const ReplayedStep& r = result_->steps[size_t(inspector_.step())];
    return {{"id", replayedStep_->id}, {"token", inspector_.tokenText(replayedStep_->id)}, {"pFinal", double(replayedStep_->pFinal)},
            {"changed", r.changed}, {"exact", r.exact}, {"storedMass", double(r.storedMass)}};
}

QVariantList StepReplay::candidates() const {
    QVariantList out;
    if (!replayedStep_) return out;
    for (const CandidateRecord& c : replayedStep_->top) out.append(inspector_.candidateMap(c, replayedStep_->id));
    return out;
}

}  // namespace inferscope
