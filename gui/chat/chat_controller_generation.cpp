// ChatController, the answer's generation as it arrives: the events of the active job's
// GenerationHandle (its prompt's tokens, the prefill, the streamed steps, the end or failure) turned
// into the answer's row, its stats and the cache note, and the answer stored when it ends; and an
// answer ended here (the window closed, a new conversation) as if the engine had stopped it.
// Starting an answer, in its variants (send, regenerate, continue, branch), is chat_controller.cpp.
#include <QFileInfo>

#include "chat/chat_controller.h"

#include <algorithm>

#include "engine/engine_controller.h"
#include "engine/prompt_builder.h"

namespace inferscope {

void ChatController::finishInterrupted() {
    if (!generating()) return;
    engine_->stop();
    const ChatMessage& m = model_.at(answerRow_);
    const size_t kept = answerPrefix_.size();  // a branch's kept steps are not part of this job
    if (m.steps.size() <= kept) {
        // Nothing new was shown: like an answer that failed (the empty one goes, a regenerated
        // answer shows its previous version), and the question is kept.
        onGenerationFailed(QString());
        if (model_.count() > 0 && model_.at(model_.count() - 1).storeId == 0) saveMessage(model_.count() - 1);
        return;
    }
    GenerationSummary summary;
    summary.reason = m.steps.back().endOfGeneration ? FinishReason::EndOfGeneration : FinishReason::Cancelled;
    summary.prefill = activePrefill_;
    for (size_t i = kept; i < m.steps.size(); ++i) {
        summary.tokens.push_back(m.steps[i].sample.id);
        summary.text += m.steps[i].piece;
    }
    summary.nGenerated = int32_t(summary.tokens.size());
    summary.kv = engine_->kvStats();
    onGenerationFinished(summary);  // released: what the stopped job still sends is not heard
}

void ChatController::release() {
    if (active_) disconnect(active_, nullptr, this, nullptr);
    active_.clear();
}

std::map<int32_t, TokenText> ChatController::tokenTextsOf(const std::vector<StepRecord>& steps) const {
    std::map<int32_t, TokenText> texts;
    auto add = [&](int32_t id) {
        if (texts.contains(id)) return;
        if (auto t = engine_->tokenText(id)) texts.emplace(id, std::move(*t));
    };
    for (const StepRecord& s : steps) {
        add(s.sample.id);
        for (const CandidateRecord& c : s.sample.top) add(c.id);
        if (s.draft && s.draft->draftedId >= 0) add(s.draft->draftedId);  // a rejected draft's token too
    }
    return texts;
}

void ChatController::onPromptPrepared(const QList<QList<int>>& chunkTokens) {
    int last = -1;
    for (qsizetype c = 0; c < chunkTokens.size() && c < qsizetype(chunkRows_.size()); ++c) {
        const int row = chunkRows_[size_t(c)];
        if (row < 0) continue;  // a branch's kept answer tokens
        if (model_.at(row).tokens.empty()) model_.setTokens(row, std::vector<int32_t>(chunkTokens[c].begin(), chunkTokens[c].end()));
        last = std::max(last, row);
    }
    // The new user message is complete: stored (after any earlier one a failed save left out).
    for (int row = 0; row <= last; ++row)
        if (model_.at(row).storeId == 0 && !saveMessage(row)) break;
}

void ChatController::onPrefillFinished(const PrefillStats& stats) {
    activePrefill_ = stats;
    // The Timeline shows the prefill while the answer streams (the final stats replace these).
    if (answerRow_ >= 0)
        model_.setStats(answerRow_, AnswerStats::fromPrefill(stats));
    // A branch in a new conversation (later turns stayed in the old one) may find the cache
    // holding another context: then more than the new token is prefilled.
    if (engine_->abilities().overNetwork)
        setCacheNote(tr("Sent the conversation to %1; its first token came after %2 ms.").arg(engine_->serverUrl()).arg(double(stats.us) / 1000.0, 0, 'f', 0));
    else if (!answerPrefix_.empty() && stats.nComputed == 1)
        setCacheNote(tr("Branched at token %1: the KV cache was truncated there; reused %2 cached tokens and ran only the new one.")
                         .arg(answerPrefix_.size()).arg(stats.nReused));
    else if (!answerPrefix_.empty())
        setCacheNote(tr("Branched at token %1: reused %2 cached tokens and prefilled %3.")
                         .arg(answerPrefix_.size()).arg(stats.nReused).arg(stats.nComputed));
    else if (stats.nReused > 0)
        setCacheNote(tr("Reused %1 cached tokens from the KV cache; prefilled %2 new.").arg(stats.nReused).arg(stats.nComputed));
    else
        setCacheNote(tr("Prefilled %1 tokens (nothing to reuse from the KV cache).").arg(stats.nComputed));
}

void ChatController::onStepsArrived(const StepBatch& batch) {
    if (answerRow_ < 0) return;
    model_.addTokenTexts(answerRow_, tokenTextsOf(batch.steps));
    if (answerPrefix_.empty()) {
        model_.appendSteps(answerRow_, batch.steps);
        return;
    }
    // A branch: the engine numbers from 0; the answer's steps continue after the kept ones.
    std::vector<StepRecord> steps = batch.steps;
    for (StepRecord& s : steps) s.step += int32_t(answerPrefix_.size());
    model_.appendSteps(answerRow_, steps);
}

void ChatController::onGenerationFinished(const GenerationSummary& summary) {
    release();
    const PromptBuilder prompt = promptBuilder();
    const int row = answerRow_;
    // The answer as shown (a chat answer's word-start space dropped) and the tokens it leaves in the context.
    std::string keptText;
    for (const StepRecord& s : answerPrefix_) keptText += s.piece;
    QString text = QString::fromUtf8(keptText + summary.text);
    if (prompt.chatTemplate().kind != ChatTemplateKind::Completion && text.startsWith(' ')) text.remove(0, 1);
    const auto& model = engine_->model();
    // Without a tokenizer the ids are the remote vocabulary's synthetic ones: nothing to put in a context.
    std::vector<int32_t> tokens = !engine_->abilities().tokenizes ? std::vector<int32_t>()
                                  : prompt.answerTokens(answerPrefix_, summary, model ? model->tokenizer.get() : nullptr);
    // Who wrote it: the loaded model, or the comparison's second model beside it (named with its
    // file, as two quantizations of a model share its name).
    const AnswerOrigin& writer = model_.at(row).origin;
    const bool byOther = model && !writer.remote() && !writer.modelFile.empty() && writer.modelFile != model->path;
    const QString author = byOther ? tr("%1 (%2)").arg(QString::fromStdString(writer.modelName),
                                                       QFileInfo(QString::fromStdString(writer.modelFile)).fileName())
                                   : engine_->modelName();
    const AnswerStats stats = AnswerStats::fromSummary(summary, int(answerPrefix_.size()), activeSampler_, author,
                                                       byOther ? QString::fromStdString(writer.device) : engine_->deviceDescription());
    model_.setTokens(row, std::move(tokens));
    if (model_.at(row).origin.remote()) {  // whether the server recorded its sampler's stages is known once its steps came
        AnswerOrigin origin = model_.at(row).origin;
        origin.stagesReported = engine_->reportedStages().size() > 1;
        model_.setOrigin(row, std::move(origin));
    }
    model_.finish(row, text, finishOf(summary.reason), stats);
    answerRow_ = -1;
    answerPrefix_.clear();
    // A new version replaces the stored answer (and anything after it) in one transaction.
    saveMessage(row);
    emit generatingChanged();
    emit canSendChanged();
    emit answerFinished(row);
}

void ChatController::onGenerationFailed(const QString& message) {
    release();
    // Nothing was generated (a prompt longer than the context, say): drop the empty answer, keep the question.
    if (answerRow_ >= 0) {
        const ChatMessage& m = model_.at(answerRow_);
        const bool arrived = m.steps.size() > answerPrefix_.size();  // a branch's kept steps are not this job's
        if (!arrived && m.variants.size() > 1)
            model_.abandonVariant(answerRow_);  // back to the version that exists
        else if (!arrived)
            model_.truncate(answerRow_);
        else {
            // Cut off (a server that hung up or stalled): what arrived is kept and stored, marked
            // interrupted, with the model that made it; Regenerate or Continue go on from it.
            AnswerStats stats = m.stats;
            stats.model = engine_->modelName();
            stats.device = engine_->deviceDescription();
            stats.sampler = activeSampler_;
            model_.finish(answerRow_, m.text, Message::Failed, stats);
            saveMessage(answerRow_);
        }
    }
    answerPrefix_.clear();
    answerRow_ = -1;
    setError(message);
    emit generatingChanged();
    emit canSendChanged();
}

}  // namespace inferscope
