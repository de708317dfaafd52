// ChatController, starting answers: the conversation's settings (mode, template, system prompt),
// what may be sent, and the ways an answer starts (send, regenerate, continue an interrupted one,
// branch from another token), each through startAnswer. What the job then reports is
// chat_controller_generation.cpp.
#include "chat/chat_controller.h"

#include <QClipboard>
#include <QGuiApplication>
#include <algorithm>
#include <cmath>

#include "chat/message_text.h"
#include "chat/structured_output.h"
#include "app/units.h"
#include "grammar/grammar_matcher.h"
#include "grammar/structured_check.h"
#include "settings/speculative_settings.h"
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
    if (!structuredReady() || !speculativeReady()) return false;  // before the question is kept
    setError(QString());
    ensureConversation(model_.count() > 0 ? model_.at(0).text : text);  // titled by its first message
    ChatMessage user;
    user.role = Message::User;
    user.text = text;
    model_.append(std::move(user));
    return startAnswer();
}

bool ChatController::startAnswer(int answerRow, std::vector<StepRecord> prefix, const StructuredConstraint& kept) {
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
    if (!prefix.empty()) {
        // A branch goes on under its answer's own constraint, from after the kept bytes (checked
        // by branchKeepsItsConstraint).
        job.structured = kept;
        if (auto g = grammar::compileConstraint(job.structured); g && *g) {
            job.grammar = *g;
            for (const StepRecord& s : prefix) job.grammarPrefix += s.piece;
        }
    } else if (structured_ && structured_->kind() != StructuredOutput::Kind::Off) {
        job.structured = structured_->constraint();
        job.grammar = structured_->grammar();
    }
    const StructuredConstraint constraint = job.structured;
    if (writer_) job.otherModel = writer_->modelFile;
    if (!writer_ && speculative_ && speculative_->enabled() && engine_->abilities().drafts) {
        SpeculativeJob spec;
        spec.source = speculative_->mode() == SpeculativeSettings::Mode::DraftModel ? DraftSource::Model : DraftSource::NGram;
        spec.maxDraft = speculative_->maxDraft();
        spec.ngramMax = SpeculativeSettings::kNgramMax;
        spec.draftModelPath = speculative_->draftModel().toStdString();
        job.speculative = std::move(spec);
    }
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
    AnswerOrigin origin = writer_ ? *writer_ : engine_->answerOrigin();
    origin.structured = constraint;
    model_.setOrigin(answerRow_, std::move(origin));
    model_.addTokenTexts(answerRow_, tokenTextsOf(answerPrefix_));
    if (!engine_->abilities().tokenizes)  // no prompt tokens come back: the question is complete now
        for (size_t row = 0; row < contextRows; ++row)
            if (model_.at(int(row)).storeId == 0 && !saveMessage(int(row))) break;
    emit generatingChanged();
    emit canSendChanged();
    return true;
}

bool ChatController::branchKeepsItsConstraint(const ChatMessage& answer, const std::vector<StepRecord>& prefix) {
    const StructuredConstraint& asked = answer.origin.structured;
    if (!asked.active()) return true;
    if (!engine_->abilities().tokenizes) {
        setError(tr("This answer was held to structured output: a branch or continuation of it runs on this machine's engine only (a server would start the constraint again after the kept text)."));
        return false;
    }
    auto g = grammar::compileConstraint(asked);
    if (!g || !*g) {
        setError(tr("Structured output: %1").arg(g ? QString() : QString::fromStdString(g.error().message)));
        return false;
    }
    grammar::GrammarMatcher matcher(*g);
    for (size_t i = 0; i + 1 < prefix.size(); ++i)
        if (!matcher.acceptBytes(prefix[i].piece)) {  // made under it: only a damaged record gets here
            setError(tr("The start of this answer does not match the structured output it was held to: it cannot be branched under it."));
            return false;
        }
    if (matcher.acceptBytes(prefix.back().piece)) return true;
    const QString what = asked.kind == StructuredKind::Gbnf ? tr("The grammar") : asked.kind == StructuredKind::Json ? tr("A JSON object") : tr("The JSON schema");
    setError(tr("%1 this answer was held to does not allow “%2” here: branch to a token it allows (the Probabilities panel's grammar column shows them).")
                 .arg(what, isolated(QString::fromUtf8(prefix.back().piece))));
    return false;
}

bool ChatController::speculativeReady() {
    if (!speculative_ || !speculative_->enabled() || !engine_->abilities().drafts) return true;  // a server answers plainly
    if (structured_ && structured_->kind() != StructuredOutput::Kind::Off) {
        setError(tr("Speculative decoding and structured output cannot run together yet: turn one of them off in Settings."));
        return false;
    }
    if (speculative_->problem().isEmpty()) return true;
    setError(tr("Speculative decoding: %1 (Settings → Speculative decoding)").arg(speculative_->problem()));
    return false;
}

bool ChatController::structuredReady() {
    if (!structured_ || structured_->kind() == StructuredOutput::Kind::Off) return true;
    if (structured_->error().isEmpty()) return true;
    setError(tr("Structured output: %1 (Settings → Structured output)").arg(structured_->error()));
    return false;
}

void ChatController::stop() {
    if (generating()) engine_->stop();
}

bool ChatController::regenerate() {
    if (!canRegenerate() || !structuredReady() || !speculativeReady()) return false;
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
    if (!canContinue() || !speculativeReady()) return false;  // under the answer's own structured output, not the setting's
    const int last = model_.count() - 1;
    std::vector<StepRecord> prefix = model_.at(last).steps;
    if (!prefix.empty() && !branchKeepsItsConstraint(model_.at(last), prefix)) return false;
    const StructuredConstraint kept = model_.at(last).origin.structured;
    model_.addVariant(last);  // the interrupted version stays reachable
    model_.replaceSteps(last, prefix);
    setError(QString());
    return startAnswer(last, std::move(prefix), kept);
}

QString ChatController::originLabel(const AnswerOrigin& origin) {
    const QString name = QString::fromStdString(origin.modelName);
    if (origin.remote()) return tr("%1 on %2").arg(name, QString::fromStdString(origin.serverUrl));
    return origin.modelFile.empty() ? name : tr("%1 (%2)").arg(name, QString::fromStdString(origin.modelFile));
}

bool ChatController::branchWithModel(int row, int step, int tokenId, const AnswerOrigin& writer) {
    if (writer.remote() || writer.modelFile.empty()) return false;
    writer_ = writer;
    const bool started = branchFrom(row, step, tokenId);
    writer_.reset();
    return started;
}

bool ChatController::branchFrom(int row, int step, int tokenId) {
    // Not the structured-output setting: a branch keeps the constraint its answer was made under.
    if (!canSend() || row < 0 || row >= model_.count() || (!writer_ && !speculativeReady())) return false;
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
    if (!branchKeepsItsConstraint(answer, prefix)) return false;
    const StructuredConstraint kept = answer.origin.structured;  // the new version starts with no origin

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
    return startAnswer(row, std::move(prefix), kept);
}

}  // namespace inferscope
