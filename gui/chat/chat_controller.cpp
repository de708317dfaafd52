#include "chat/chat_controller.h"

#include <QClipboard>
#include <QGuiApplication>
#include <algorithm>
#include <cmath>

#include "chat/message_text.h"
#include "chat/structured_output.h"
#include "engine/engine_controller.h"
#include "engine/prompt_builder.h"
#include "sampler/alternative.h"
#include "settings/sampling_settings.h"

namespace inferscope {
namespace {

// Raw logits kept per step for replay: the whole vocabulary of small models (stories260K: 512),
// the highest 512 otherwise (4 KiB per token).
constexpr int32_t kReplayWidth = 512;

}  // namespace

ChatController::ChatController(EngineController* engine, SamplingSettings* sampling, ChatStore* store, QObject* parent)
    : QObject(parent), engine_(engine), sampling_(sampling), store_(store) {
    connect(engine_, &EngineController::modelChanged, this, &ChatController::onModelChanged);
    connect(engine_, &EngineController::stateChanged, this, &ChatController::canSendChanged);
    connect(sampling_, &SamplingSettings::changed, this, &ChatController::canSendChanged);
    connect(&model_, &ChatModel::countChanged, this, &ChatController::canSendChanged);
}

ChatController::~ChatController() { finishInterrupted(); }

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

QString ChatController::modeName(Mode mode) {
    return mode == Mode::Chat ? QStringLiteral("chat") : QStringLiteral("completion");
}

ChatController::Mode ChatController::modeFromName(const QString& name) {
    return name == QLatin1String("chat") ? Mode::Chat : Mode::Completion;
}

void ChatController::setMode(Mode mode) {
    if (mode == mode_) return;
    mode_ = mode;
    for (size_t r = 0; r < model_.messages().size(); ++r) model_.forgetTokens(int(r));  // re-render under the new template
    saveConversationSettings();
    emit settingsChanged();
}

void ChatController::setTemplateChoice(const QString& choice) {
    if (choice == templateChoice_ || !templateNames().contains(choice)) return;
    templateChoice_ = choice;
    for (size_t r = 0; r < model_.messages().size(); ++r) model_.forgetTokens(int(r));
    saveConversationSettings();
    emit settingsChanged();
}

void ChatController::setSystemPrompt(const QString& text) {
    const QString prompt = wellFormed(text);
    if (prompt == systemPrompt_) return;
    systemPrompt_ = prompt;
    if (!model_.messages().empty()) model_.forgetTokens(0);  // the system prompt lives in the first chunk
    saveConversationSettings();
    emit settingsChanged();
}

bool ChatController::canSend() const {
    return engine_->state() == EngineController::State::Ready && !generating() &&
           (samplerOverride_ || sampling_->valid());
}

bool ChatController::canRegenerate() const {
    return canSend() && model_.count() >= 2 && model_.at(model_.count() - 1).role == Message::Assistant;
}

void ChatController::setError(const QString& message) {
    lastError_ = message;
    emit lastErrorChanged();
}

void ChatController::setCacheNote(const QString& note) {
    cacheNote_ = note;
    emit cacheNoteChanged();
}

void ChatController::onModelChanged() {
    // Token ids belong to a vocabulary: with another model every message is tokenized again.
    for (size_t r = 0; r < model_.messages().size(); ++r) model_.forgetTokens(int(r));
    if (model_.count() == 0) {
        // A fresh conversation takes the model's own way of talking.
        // A server applies its own template to messages: always chat.
        const bool hasTemplate = !engine_->abilities().tokenizes || (engine_->model() && engine_->model()->detectedTemplate);
        mode_ = hasTemplate ? Mode::Chat : Mode::Completion;
        templateChoice_ = QStringLiteral("auto");
        emit settingsChanged();
    }
    emit canSendChanged();
}

QString ChatController::tooLongError(const QString& text, const QString& what) const {
    const auto& m = engine_->model();
    if (!m) return {};
    const int64_t atLeast = minTokensFor(utf8Length(text), m->maxTokenBytes);
    if (atLeast <= m->contextLength) return {};
    return tr("%1: it needs at least %2 tokens and the context holds %3. Shorten it, or load the model with a larger "
              "context.").arg(what.isEmpty() ? tr("The message is too long") : what).arg(atLeast).arg(m->contextLength);
}

bool ChatController::pasteAllowed() {
    if (!qobject_cast<QGuiApplication*>(QCoreApplication::instance())) return true;
    const QString error = tooLongError(QGuiApplication::clipboard()->text(), tr("Not pasted, the text is too long"));
    if (error.isEmpty()) return true;
    setError(error);
    return false;
}

bool ChatController::send(const QString& typed) {
    const QString text = wellFormed(typed);
    if (!canSend()) return false;
    if (text.trimmed().isEmpty() && mode_ == Mode::Chat) return false;
    if (const QString error = tooLongError(text); !error.isEmpty()) {
        setError(error);
        return false;
    }
    if (!structuredReady()) return false;  // before the question is kept
    setError(QString());
    ensureConversation(model_.count() > 0 ? model_.at(0).text : text);  // titled by its first message
    ChatMessage user;
    user.role = Message::User;
    user.text = text;
    model_.append(std::move(user));
    return startAnswer();
}

bool ChatController::startAnswer(int answerRow, std::vector<StepRecord> prefix) {
    const PromptBuilder prompt = promptBuilder();
    const ChatTemplate& tmpl = prompt.chatTemplate();
    const size_t contextRows = answerRow >= 0 ? size_t(answerRow) : model_.messages().size();
    chunkRows_.clear();
    for (size_t r = 0; r < contextRows; ++r) chunkRows_.push_back(int(r));
    GenerationJob job;
    if (!engine_->abilities().tokenizes) {  // messages, for the backend's own template
        if (mode_ != Mode::Chat) {
            setError(tr("A model on a server answers in chat mode: the server applies its own template."));
            return false;
        }
        job.messages = remoteMessages(contextRows);
        if (!prefix.empty()) {  // a branch: the answer so far, the alternative last, for the server to continue
            std::string soFar;
            for (const StepRecord& s : prefix) soFar += s.piece;
            if (answerRow >= 0 && model_.at(answerRow).trimLeadingSpace && soFar.starts_with(' ')) soFar.erase(0, 1);  // as shown and stored
            job.messages.emplace_back("assistant", std::move(soFar));
            job.continueFinalMessage = true;
        }
    } else {
        job.chunks = contextChunks(prompt, contextRows);
        if (!prefix.empty()) {  // a branch: the answer so far, then the chosen alternative
            job.chunks.push_back(PromptBuilder::keptSteps(prefix));
            chunkRows_.push_back(-1);
        }
    }
    if (structured_) job.grammar = structured_->grammar();
    answerPrefix_ = std::move(prefix);
    activeSampler_ = samplerOverride_ ? *samplerOverride_ : sampling_->params();
    job.sampler = activeSampler_;
    job.maxTokens = maxTokensOverride_.value_or(sampling_->maxTokens());
    job.threads = sampling_->threads();
    job.stopStrings = tmpl.stopStrings();
    job.replayWidth = kReplayWidth;

    if (answerRow < 0) {
        ChatMessage answer;
        answer.role = Message::Assistant;
        answer.streaming = true;
        answer.trimLeadingSpace = tmpl.kind != ChatTemplateKind::Completion;
        answerRow_ = model_.append(std::move(answer));
    } else {
        answerRow_ = answerRow;  // a new version of an existing answer (regenerate, branch)
    }
    active_ = engine_->startGeneration(std::move(job));
    if (!active_) {
        if (answerRow < 0) model_.truncate(answerRow_);
        answerRow_ = -1;
        setError(tr("The model is not ready."));
        return false;
    }
    connect(active_, &GenerationHandle::promptPrepared, this, &ChatController::onPromptPrepared);
    connect(active_, &GenerationHandle::prefillFinished, this, &ChatController::onPrefillFinished);
    connect(active_, &GenerationHandle::stepsArrived, this, &ChatController::onStepsArrived);
    connect(active_, &GenerationHandle::finished, this, &ChatController::onGenerationFinished);
    connect(active_, &GenerationHandle::failed, this, &ChatController::onGenerationFailed);
    // The answer keeps what made it, and the text of each token its steps name (a branch's kept ones now).
    model_.setOrigin(answerRow_, engine_->answerOrigin());
    model_.addTokenTexts(answerRow_, tokenTextsOf(answerPrefix_));
    if (!engine_->abilities().tokenizes)  // no prompt tokens come back: the question is complete now
        for (size_t row = 0; row < contextRows; ++row)
            if (model_.at(int(row)).storeId == 0 && !saveMessage(int(row))) break;
    emit generatingChanged();
    emit canSendChanged();
    return true;
}

bool ChatController::structuredReady() {
    if (!structured_ || structured_->kind() == StructuredOutput::Kind::Off) return true;
    if (!structured_->error().isEmpty())
        setError(tr("Structured output: %1 (Settings → Structured output)").arg(structured_->error()));
    else if (!engine_->abilities().tokenizes)
        setError(tr("Structured output runs on this machine's engine; a server's answers are not constrained here. Turn it off to chat with the server."));
    else
        return true;
    return false;
}

void ChatController::release() {
    if (active_) disconnect(active_, nullptr, this, nullptr);
    active_.clear();
}

void ChatController::stop() {
    if (generating()) engine_->stop();
}

bool ChatController::regenerate() {
    if (!canRegenerate() || !structuredReady()) return false;
    const int last = model_.count() - 1;
    model_.addVariant(last);  // the previous answer stays reachable as another version
    setError(QString());
    return startAnswer(last);
}

bool ChatController::canContinue() const {
    if (!canRegenerate()) return false;
    const ChatMessage& m = model_.at(model_.count() - 1);
    // Its tokens are ids of the model that made it: another model (or a server for a local answer)
    // would read them as other tokens.
    return m.finishReason == Message::Failed && !m.steps.empty() && !m.steps.back().endOfGeneration && m.stats.model == engine_->modelName() &&
           m.stats.device == engine_->deviceDescription();
}

bool ChatController::continueAnswer() {
    if (!canContinue() || !structuredReady()) return false;
    const int last = model_.count() - 1;
    std::vector<StepRecord> prefix = model_.at(last).steps;
    model_.addVariant(last);  // the interrupted version stays reachable
    model_.replaceSteps(last, prefix);
    setError(QString());
    return startAnswer(last, std::move(prefix));
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
    }
    return texts;
}

QString ChatController::originLabel(const AnswerOrigin& origin) {
    const QString name = QString::fromStdString(origin.modelName);
    if (origin.remote()) return tr("%1 on %2").arg(name, QString::fromStdString(origin.serverUrl));
    return origin.modelFile.empty() ? name : tr("%1 (%2)").arg(name, QString::fromStdString(origin.modelFile));
}

bool ChatController::branchFrom(int row, int step, int tokenId) {
    if (!canSend() || row < 0 || row >= model_.count() || !structuredReady()) return false;
    const ChatMessage& answer = model_.at(row);
    if (answer.role != Message::Assistant || step < 0 || step >= int(answer.steps.size())) return false;
    // The kept steps, and the alternative in place of step `step`'s pick: same distribution,
    // another choice.
    std::vector<StepRecord> prefix(answer.steps.begin(), answer.steps.begin() + step + 1);
    StepRecord& alt = prefix.back();
    if (alt.sample.id == tokenId) return false;  // not an alternative
    // The ids are the answer's model's: another model would continue it with other tokens.
    if (answer.origin.known() && !answer.origin.sameModel(engine_->answerOrigin())) {
        setError(tr("This answer was made by %1: load it to branch from the answer.").arg(originLabel(answer.origin)));
        return false;
    }
    if (!engine_->abilities().tokenizes) {
        // One of the alternatives the server listed (remote ids stand for their bytes); the server
        // continues the answer so far with it (startAnswer).
        const auto bytes = engine_->tokenBytes(tokenId);
        const auto& top = alt.sample.top;
        if (!bytes || bytes->empty() || std::none_of(top.begin(), top.end(), [&](const auto& c) { return c.id == tokenId; })) return false;
        alt.sample = withAlternativePick(alt.sample, alt.replayIds, alt.replayLogits, tokenId);
        alt.piece = *bytes;
        alt.endOfGeneration = false;
    } else {
        const auto& tokenizer = engine_->model()->tokenizer;
        if (tokenId < 0 || tokenId >= tokenizer->vocabSize()) return false;
        alt.sample = withAlternativePick(alt.sample, alt.replayIds, alt.replayLogits, tokenId);
        alt.piece = tokenizer->isEndOfGeneration(tokenId) ? std::string() : tokenizer->tokenBytes(tokenId);
        alt.endOfGeneration = tokenizer->isEndOfGeneration(tokenId);
        if (alt.endOfGeneration) return false;  // nothing would follow: not a branch worth running
    }

    // Later turns followed the old continuation: they stay in the stored conversation, and the
    // branch goes on in a new one (as switching to another version does).
    if (row + 1 < model_.count()) {
        const int version = std::max<int>(1, int(answer.variants.size())) + 1;
        const QString original = title_;
        const QString title = tr("%1 (version %2)").arg(original).arg(version);
        if (!continueInNewConversation(row + 1, title, tr("Could not open the branch as a new conversation: %1"))) return false;
        if (conversationId_ != 0)
            setStoreMessage(tr("Version %1 of that answer continues here, in “%2”; the turns that followed the other version stay in “%3”.")
                                .arg(version)
                                .arg(title, original));
    }
    model_.addVariant(row);
    model_.replaceSteps(row, prefix);
    setError(QString());
    return startAnswer(row, std::move(prefix));
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
    const AnswerStats stats = AnswerStats::fromSummary(summary, int(answerPrefix_.size()), activeSampler_, engine_->modelName(),
                                                       engine_->deviceDescription());
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
