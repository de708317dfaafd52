#include "chat_controller.h"

#include <QClipboard>
#include <QFileInfo>
#include <QGuiApplication>
#include <cmath>
#include <QJsonObject>

#include "chat_store.h"
#include "engine/step_record_codec.h"
#include "sampler/alternative.h"
#include "engine_controller.h"
#include "sampling_settings.h"

namespace inferscope {
namespace {

ChatController* gInstance = nullptr;
// Raw logits kept per step for replay: the whole vocabulary of small models (stories260K: 512),
// the highest 512 otherwise (4 KiB per token).
constexpr int32_t kReplayWidth = 512;

QByteArray encodeSteps(const std::vector<StepRecord>& steps) {
    if (steps.empty()) return {};
    const auto bytes = encodeStepRecords(steps);
    return QByteArray(reinterpret_cast<const char*>(bytes.data()), qsizetype(bytes.size()));
}

std::vector<StepRecord> decodeSteps(const QByteArray& records) {
    if (records.isEmpty()) return {};
    auto steps = decodeStepRecords(std::span(reinterpret_cast<const uint8_t*>(records.constData()), size_t(records.size())));
    return steps ? std::move(*steps) : std::vector<StepRecord>{};
}

// UTF-8 length without converting (a 10 MB paste is measured in a few milliseconds).
int64_t utf8Length(QStringView text) {
    int64_t n = 0;
    for (qsizetype i = 0; i < text.size(); ++i) {
        const char16_t c = text[i].unicode();
        if (c < 0x80) n += 1;
        else if (c < 0x800) n += 2;
        else if (QChar::isHighSurrogate(c) && i + 1 < text.size() && QChar::isLowSurrogate(text[i + 1].unicode())) n += 4, ++i;
        else n += 3;  // a lone surrogate becomes U+FFFD (3 bytes)
    }
    return n;
}

// Lone surrogates (a JavaScript string can hold them, UTF-8 cannot) become U+FFFD, as they do
// on their way to the tokenizer: what is shown and stored is what the model was given.
QString wellFormed(QString text) {
    if (text.isValidUtf16()) return text;
    for (qsizetype i = 0; i < text.size(); ++i) {
        if (text[i].isHighSurrogate() && i + 1 < text.size() && text[i + 1].isLowSurrogate()) ++i;
        else if (text[i].isSurrogate()) text[i] = QChar::ReplacementCharacter;
    }
    return text;
}

QString firstLine(const QString& text, int max) {
    QString t = text.simplified();
    if (t.size() > max) t = t.left(max - 1) + QChar(0x2026);
    return t;
}

}  // namespace

void ChatController::setInstance(ChatController* instance) { gInstance = instance; }

ChatController* ChatController::create(QQmlEngine*, QJSEngine*) {
    Q_ASSERT(gInstance);
    QJSEngine::setObjectOwnership(gInstance, QJSEngine::CppOwnership);
    return gInstance;
}

ChatController::ChatController(EngineController* engine, SamplingSettings* sampling, ChatStore* store, QObject* parent)
    : QObject(parent), engine_(engine), sampling_(sampling), store_(store) {
    connect(engine_, &EngineController::modelChanged, this, &ChatController::onModelChanged);
    connect(engine_, &EngineController::stateChanged, this, &ChatController::canSendChanged);
    connect(engine_, &EngineController::promptPrepared, this, &ChatController::onPromptPrepared);
    connect(engine_, &EngineController::prefillFinished, this, &ChatController::onPrefillFinished);
    connect(engine_, &EngineController::stepsArrived, this, &ChatController::onStepsArrived);
    connect(engine_, &EngineController::generationFinished, this, &ChatController::onGenerationFinished);
    connect(engine_, &EngineController::generationFailed, this, &ChatController::onGenerationFailed);
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
        onGenerationFailed(activeJob_, QString());
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
    onGenerationFinished(activeJob_, summary);  // the job is no longer this controller's: what still comes is ignored
}

QStringList ChatController::templateNames() const {
    QStringList names{QStringLiteral("auto")};
    for (ChatTemplateKind kind : allChatTemplateKinds()) names << QString::fromLatin1(chatTemplateName(kind).data());
    return names;
}

ChatTemplate ChatController::chatTemplate() const {
    if (mode_ == QLatin1String("completion")) return {ChatTemplateKind::Completion};
    if (auto k = chatTemplateFromName(templateChoice_.toStdString()); k && templateChoice_ != QLatin1String("auto")) return {*k};
    if (engine_->model() && engine_->model()->detectedTemplate) return {*engine_->model()->detectedTemplate};
    // No template in the file: the family whose turn markers the vocabulary has (a Qwen or Gemma
    // base model), else Llama 2, the most common family for SentencePiece vocabularies.
    if (engine_->model())
        if (auto k = chatTemplateFromVocabulary(*engine_->model()->tokenizer)) return {*k};
    return {ChatTemplateKind::Llama2};
}

void ChatController::setMode(const QString& mode) {
    const QString m = mode == QLatin1String("chat") ? QStringLiteral("chat") : QStringLiteral("completion");
    if (m == mode_) return;
    mode_ = m;
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
    return canSend() && model_.count() >= 2 && model_.at(model_.count() - 1).role == QLatin1String("assistant");
}

void ChatController::setError(const QString& message) {
    lastError_ = message;
    emit lastErrorChanged();
}

void ChatController::setCacheNote(const QString& note) {
    cacheNote_ = note;
    emit cacheNoteChanged();
}

std::vector<int32_t> ChatController::tokenize(const std::string& text, bool addBos) const {
    if (!engine_->model()) return {};
    return engine_->model()->tokenizer->encode(text, addBos, true);
}

void ChatController::onModelChanged() {
    // Token ids belong to a vocabulary: with another model every message is tokenized again.
    for (size_t r = 0; r < model_.messages().size(); ++r) model_.forgetTokens(int(r));
    if (model_.count() == 0) {
        // A fresh conversation takes the model's own way of talking.
        const bool hasTemplate = engine_->model() && engine_->model()->detectedTemplate;
        mode_ = hasTemplate ? QStringLiteral("chat") : QStringLiteral("completion");
        templateChoice_ = QStringLiteral("auto");
        emit settingsChanged();
    }
    emit canSendChanged();
}

bool ChatController::ensureConversation(const QString& firstText) {
    if (conversationId_ != 0 || !store_ || !store_->isOpen()) return true;
    StoredConversation c;
    c.title = firstLine(firstText, 60);
    c.modelName = engine_->modelPath();
    c.systemPrompt = systemPrompt_;
    c.mode = mode_;
    c.templateName = templateChoice_ == QLatin1String("auto") ? QString() : templateChoice_;
    auto id = store_->createConversation(c);
    if (!id) {
        setError(store_->lastError());  // "Could not create the conversation: database or disk is full"
        return false;
    }
    conversationId_ = *id;
    title_ = c.title;
    conversationModel_ = c.modelName;
    emit conversationChanged();
    return true;
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
    if (text.trimmed().isEmpty() && mode_ == QLatin1String("chat")) return false;
    if (const QString error = tooLongError(text); !error.isEmpty()) {
        setError(error);
        return false;
    }
    setError(QString());
    ensureConversation(model_.count() > 0 ? model_.at(0).text : text);  // titled by its first message
    ChatMessage user;
    user.role = QStringLiteral("user");
    user.text = text;
    model_.append(std::move(user));
    return startAnswer();
}

bool ChatController::startAnswer(int answerRow, std::vector<StepRecord> prefix) {
    const ChatTemplate tmpl = chatTemplate();
    GenerationJob job;
    chunkRows_.clear();
    const auto& msgs = model_.messages();
    const size_t contextRows = answerRow >= 0 ? size_t(answerRow) : msgs.size();
    for (size_t r = 0; r < contextRows; ++r) {
        const ChatMessage& m = msgs[r];
        PromptChunk chunk;
        if (!m.tokens.empty()) {
            chunk.tokens = m.tokens;
            chunk.hasTokens = true;
        } else if (m.role == QLatin1String("user")) {
            chunk.text = tmpl.userTurn(m.text.toStdString(), systemPrompt_.toStdString(), r == 0) + tmpl.assistantPrefix();
            chunk.addBos = r == 0 && tmpl.tokenizerAddsBos() && engine_->model()->tokenizer->addBosByDefault();
        } else {
            chunk.text = m.text.toStdString() + tmpl.assistantSuffix();
        }
        job.chunks.push_back(std::move(chunk));
        chunkRows_.push_back(int(r));
    }
    if (!prefix.empty()) {  // a branch: the answer so far, then the chosen alternative
        PromptChunk chunk;
        chunk.hasTokens = true;
        for (const StepRecord& s : prefix) chunk.tokens.push_back(s.sample.id);
        job.chunks.push_back(std::move(chunk));
        chunkRows_.push_back(-1);
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
        answer.role = QStringLiteral("assistant");
        answer.streaming = true;
        answer.trimLeadingSpace = tmpl.kind != ChatTemplateKind::Completion;
        answerRow_ = model_.append(std::move(answer));
    } else {
        answerRow_ = answerRow;  // a new version of an existing answer (regenerate, branch)
    }
    activeJob_ = engine_->startGeneration(std::move(job));
    if (activeJob_ == 0) {
        if (answerRow < 0) model_.truncate(answerRow_);
        answerRow_ = -1;
        setError(tr("The model is not ready."));
        return false;
    }
    emit generatingChanged();
    emit canSendChanged();
    return true;
}

void ChatController::stop() {
    if (generating()) engine_->stop();
}

bool ChatController::regenerate() {
    if (!canRegenerate()) return false;
    const int last = model_.count() - 1;
    model_.addVariant(last);  // the previous answer stays reachable as another version
    setError(QString());
    return startAnswer(last);
}

bool ChatController::branchFrom(int row, int step, int tokenId) {
    if (!canSend() || row < 0 || row >= model_.count()) return false;
    const ChatMessage& answer = model_.at(row);
    if (answer.role != QLatin1String("assistant") || step < 0 || step >= int(answer.steps.size())) return false;
    const auto& tokenizer = engine_->model()->tokenizer;
    if (tokenId < 0 || tokenId >= tokenizer->vocabSize()) return false;
    // The kept steps, and the alternative in place of step `step`'s pick: same distribution,
    // another choice.
    std::vector<StepRecord> prefix(answer.steps.begin(), answer.steps.begin() + step + 1);
    StepRecord& alt = prefix.back();
    if (alt.sample.id == tokenId) return false;  // not an alternative
    alt.sample = withAlternativePick(alt.sample, alt.replayIds, alt.replayLogits, tokenId);
    alt.piece = tokenizer->isEndOfGeneration(tokenId) ? std::string() : tokenizer->tokenBytes(tokenId);
    alt.endOfGeneration = tokenizer->isEndOfGeneration(tokenId);
    if (alt.endOfGeneration) return false;  // nothing would follow: not a branch worth running

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

bool ChatController::showVariant(int row, int variant) {
    if (generating()) return false;
    const QString original = title_;
    const qint64 originalId = conversationId_;
    if (!model_.showVariant(row, variant)) return false;  // refuses a row or version that is not there
    const bool laterTurns = row + 1 < model_.count();
    if (!laterTurns || !store_ || !store_->isOpen() || originalId == 0) {
        if (laterTurns) model_.truncate(row + 1);  // they were made with the other version (and are not stored)
        saveMessage(row);  // the last answer (or nothing on disk yet): this conversation shows the version
        return true;
    }
    // Later turns were made with the version shown: they stay in this conversation, untouched, and
    // the other version continues in a new conversation with the turns up to this answer (and all
    // its versions), as a branch.
    const QString title = tr("%1 (version %2)").arg(original).arg(variant + 1);
    if (!continueInNewConversation(row + 1, title, tr("Could not open that version as a new conversation: %1"))) return false;
    setStoreMessage(tr("Version %1 of that answer continues here, in “%2”; the turns that followed the other version stay in “%3”.")
                        .arg(variant + 1)
                        .arg(title, original));
    return true;
}

bool ChatController::editAndResend(int row, const QString& typed) {
    const QString text = wellFormed(typed);
    if (!canSend() || row < 0 || row >= model_.count() || model_.at(row).role != QLatin1String("user")) return false;
    if (const QString error = tooLongError(text); !error.isEmpty()) {
        setError(error);
        return false;
    }
    // What followed the question (its answer, their versions, later turns) stays in the stored
    // conversation; the edit goes on in a new one holding the turns before it.
    if (row + 1 < model_.count() && store_ && store_->isOpen() && conversationId_ != 0) {
        const QString original = title_;
        const QString title = tr("%1 (edited)").arg(original);
        if (!continueInNewConversation(row, title, tr("Could not open the edit as a new conversation: %1"), text)) return false;
        setStoreMessage(tr("The edited question continues here, in “%1”; the turns that followed the original stay in “%2”.")
                            .arg(title, original));
    }
    model_.truncate(row);
    ChatMessage user;
    user.role = QStringLiteral("user");
    user.text = text;
    model_.append(std::move(user));
    setError(QString());
    return startAnswer();
}

void ChatController::onPromptPrepared(quint64 jobId, const QList<QList<int>>& chunkTokens) {
    if (jobId != activeJob_) return;
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

void ChatController::onPrefillFinished(quint64 jobId, const PrefillStats& stats) {
    if (jobId != activeJob_) return;
    activePrefill_ = stats;
    // The Timeline shows the prefill while the answer streams (the final stats replace these).
    if (answerRow_ >= 0)
        model_.setStats(answerRow_, {{"promptTokens", stats.nPrompt},
                                     {"reusedTokens", stats.nReused},
                                     {"prefilledTokens", stats.nComputed},
                                     {"prefillMs", double(stats.us) / 1000.0},
                                     {"prefillTokensPerSecond", stats.tokensPerSecond()}});
    // A branch in a new conversation (later turns stayed in the old one) may find the cache
    // holding another context: then more than the new token is prefilled.
    if (!answerPrefix_.empty() && stats.nComputed == 1)
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

void ChatController::onStepsArrived(quint64 jobId, const StepBatch& batch) {
    if (jobId != activeJob_ || answerRow_ < 0) return;
    if (answerPrefix_.empty()) {
        model_.appendSteps(answerRow_, batch.steps);
        return;
    }
    // A branch: the engine numbers from 0; the answer's steps continue after the kept ones.
    std::vector<StepRecord> steps = batch.steps;
    for (StepRecord& s : steps) s.step += int32_t(answerPrefix_.size());
    model_.appendSteps(answerRow_, steps);
}

void ChatController::onGenerationFinished(quint64 jobId, const GenerationSummary& summary) {
    if (jobId != activeJob_) return;
    const ChatTemplate tmpl = chatTemplate();
    const int row = answerRow_;
    // The answer's context tokens: what the model generated, closed with the end-of-turn marker
    // when the model did not end the turn itself; an answer cut at a stop string is re-tokenized
    // without it.
    std::vector<int32_t> tokens;
    std::string prefixText;
    for (const StepRecord& s : answerPrefix_) {
        tokens.push_back(s.sample.id);
        prefixText += s.piece;
    }
    QString text = QString::fromUtf8(prefixText + summary.text);
    if (tmpl.kind != ChatTemplateKind::Completion && text.startsWith(' ')) text.remove(0, 1);
    if (summary.reason == FinishReason::StopString) {
        tokens = tokenize(prefixText + summary.text + tmpl.assistantSuffix(), false);
    } else {
        tokens.insert(tokens.end(), summary.tokens.begin(), summary.tokens.end());
        if (summary.reason != FinishReason::EndOfGeneration && !tmpl.assistantSuffix().empty()) {
            auto suffix = tokenize(tmpl.assistantSuffix(), false);
            tokens.insert(tokens.end(), suffix.begin(), suffix.end());
        }
    }
    QVariantMap stats{{"promptTokens", summary.prefill.nPrompt},
                      {"reusedTokens", summary.prefill.nReused},
                      {"prefilledTokens", summary.prefill.nComputed},
                      {"prefillMs", double(summary.prefill.us) / 1000.0},
                      {"prefillTokensPerSecond", summary.prefill.tokensPerSecond()},
                      {"generatedTokens", summary.nGenerated},
                      {"decodeMs", double(summary.decodeUs) / 1000.0},
                      {"decodeTokensPerSecond", summary.decodeTokensPerSecond()},
                      {"timeToFirstTokenMs", double(summary.timeToFirstTokenUs) / 1000.0},
                      {"kvBytesUsed", double(summary.kv.bytesUsed)},
                      {"kvComputed", double(summary.kv.kvComputed)},
                      {"attentionScores", double(summary.kv.attentionScores)},
                      {"model", engine_->modelName()},
                      {"device", engine_->deviceDescription()},
                      {"temperature", activeSampler_.temperature},
                      {"topK", activeSampler_.topK},
                      {"topP", activeSampler_.topP},
                      {"minP", activeSampler_.minP},
                      {"repeatPenalty", activeSampler_.repeatPenalty},
                      {"repeatLastN", activeSampler_.repeatLastN},
                      {"seed", QString::number(activeSampler_.seed)}};
    if (!answerPrefix_.empty()) {
        stats.insert("branchedAt", int(answerPrefix_.size()) - 1);
        // The answer's tokens are the kept ones and the new ones, as the panels count its steps.
        stats.insert("keptTokens", int(answerPrefix_.size()));
        stats.insert("generatedTokens", int(answerPrefix_.size()) + summary.nGenerated);
    }
    model_.setTokens(row, std::move(tokens));
    model_.finish(row, text, QString::fromLatin1(finishReasonName(summary.reason).data()), stats);
    activeJob_ = 0;
    answerRow_ = -1;
    answerPrefix_.clear();
    // A new version replaces the stored answer (and anything after it) in one transaction.
    saveMessage(row);
    emit generatingChanged();
    emit canSendChanged();
    emit answerFinished(row);
}

void ChatController::onGenerationFailed(quint64 jobId, const QString& message) {
    if (jobId != activeJob_) return;
    // Nothing was generated (a prompt longer than the context, say): drop the empty answer, keep the question.
    if (answerRow_ >= 0) {
        const ChatMessage& m = model_.at(answerRow_);
        if (m.variants.size() > 1)
            model_.abandonVariant(answerRow_);  // back to the version that exists
        else if (m.steps.empty())
            model_.truncate(answerRow_);
        else
            model_.finish(answerRow_, m.text, QStringLiteral("error"), m.stats);
    }
    answerPrefix_.clear();
    activeJob_ = 0;
    answerRow_ = -1;
    setError(message);
    emit generatingChanged();
    emit canSendChanged();
}

bool ChatController::continueInNewConversation(int keep, const QString& title, const QString& failure, const QString& firstText) {
    if (!store_ || !store_->isOpen() || conversationId_ == 0) {
        model_.truncate(keep);  // nothing stored to keep
        return true;
    }
    const qint64 originalId = conversationId_;
    model_.truncate(keep);
    for (int r = 0; r < keep; ++r) model_.setStoreId(r, 0);
    conversationId_ = 0;
    const bool made = ensureConversation(keep > 0 ? model_.at(0).text : firstText) && renameConversation(conversationId_, title) &&
                      (keep == 0 || saveMessage(keep - 1));
    if (!made) {
        // A full disk, say: no half-made copy is left, and the window shows the original again.
        const QString why = store_->lastError();
        if (conversationId_ != 0) store_->deleteConversation(conversationId_);
        openConversation(originalId);
        setError(failure.arg(why));
        return false;
    }
    return true;
}

bool ChatController::saveMessage(int row) {
    if (!store_ || !store_->isOpen()) return false;
    if (conversationId_ == 0 && !ensureConversation(model_.at(0).text)) return false;
    for (int r = 0; r < row; ++r)
        if (model_.at(r).storeId == 0 && !saveRow(r)) return false;
    return saveRow(row);
}

bool ChatController::saveRow(int row) {
    const ChatMessage& m = model_.at(row);
    StoredMessage s;
    s.conversationId = conversationId_;
    s.position = row;
    s.role = m.role;
    s.content = m.text;
    s.finishReason = m.finishReason;
    s.stats = QJsonObject::fromVariantMap(m.stats);
    s.tokens = QVector<qint32>(m.tokens.begin(), m.tokens.end());
    s.tokenRecords = encodeSteps(m.steps);
    // An answer with versions: the shown one is the row (fields mirrored in m), the others go with it.
    QList<StoredVersion> others;
    if (m.variants.size() > 1) {
        s.versionIndex = m.activeVariant;
        for (size_t i = 0; i < m.variants.size(); ++i) {
            if (int(i) == m.activeVariant) continue;
            const AnswerVariant& v = m.variants[i];
            others.append({int(i), v.text, v.finishReason, QJsonObject::fromVariantMap(v.stats),
                           QVector<qint32>(v.tokens.begin(), v.tokens.end()), encodeSteps(v.steps)});
        }
    }
    // Replacing from the row's position: nothing normally (the rows after it are not stored yet),
    // a previous version of this answer, or rows an edit removed when removing them failed.
    auto id = store_->replaceMessagesFrom(s, others);
    if (!id) {
        setError(store_->lastError());  // "Could not save the message: database or disk is full"
        return false;
    }
    model_.setStoreId(row, *id);
    return true;
}

void ChatController::saveConversationSettings() {
    if (!store_ || !store_->isOpen() || conversationId_ == 0) return;
    auto c = store_->conversation(conversationId_);
    if (!c) return;
    c->systemPrompt = systemPrompt_;
    c->mode = mode_;
    c->templateName = templateChoice_ == QLatin1String("auto") ? QString() : templateChoice_;
    c->modelName = engine_->modelPath();
    store_->updateConversation(*c);
}

void ChatController::newConversation() {
    // Mid-answer: the answer so far stays with its conversation. (Only stopping left the job
    // streaming into the new, empty conversation's row 1: ChatModel::appendSteps out of bounds.)
    finishInterrupted();
    model_.reset({});
    conversationId_ = 0;
    title_.clear();
    setCacheNote(QString());
    setError(QString());
    // The mode, template and system prompt the user set stay (Ctrl+N forgot them); the model's
    // own mode is taken when a model is loaded.
    emit canSendChanged();
    emit conversationChanged();
}

bool ChatController::openConversation(qint64 id) {
    if (!store_ || generating()) return false;
    auto c = store_->conversation(id);
    if (!c) return false;
    std::vector<ChatMessage> rows;
    const bool sameModel = c->modelName == engine_->modelPath();
    for (const StoredMessage& s : store_->messages(id)) {
        ChatMessage m;
        m.storeId = s.id;
        m.role = s.role;
        m.text = s.content;
        m.finishReason = s.finishReason;
        m.stats = s.stats.toVariantMap();
        if (sameModel) m.tokens.assign(s.tokens.begin(), s.tokens.end());
        m.steps = decodeSteps(s.tokenRecords);
        if (s.versionCount > 1) {
            // Every version in index order, the shown one (mirrored above) at its place.
            std::vector<std::pair<int, AnswerVariant>> all{{s.versionIndex, {m.text, m.finishReason, m.stats, m.tokens, m.steps}}};
            for (const StoredVersion& v : store_->versions(s.id)) {
                AnswerVariant variant{v.content, v.finishReason, v.stats.toVariantMap(), {}, decodeSteps(v.tokenRecords)};
                if (sameModel) variant.tokens.assign(v.tokens.begin(), v.tokens.end());
                all.emplace_back(v.index, std::move(variant));
            }
            std::stable_sort(all.begin(), all.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
            if (all.size() > 1) {
                for (auto& [index, variant] : all) {
                    if (index == s.versionIndex) m.activeVariant = int(m.variants.size());
                    m.variants.push_back(std::move(variant));
                }
            }
        }
        rows.push_back(std::move(m));
    }
    model_.reset(std::move(rows));
    conversationId_ = id;
    title_ = c->title;
    conversationModel_ = c->modelName;
    mode_ = c->mode == QLatin1String("chat") ? QStringLiteral("chat") : QStringLiteral("completion");
    templateChoice_ = c->templateName.isEmpty() ? QStringLiteral("auto") : c->templateName;
    systemPrompt_ = c->systemPrompt;
    setCacheNote(QString());
    setError(QString());
    emit settingsChanged();
    emit conversationChanged();
    return true;
}

bool ChatController::renameConversation(qint64 id, const QString& title) {
    if (!store_ || !store_->renameConversation(id, title)) return false;
    if (id == conversationId_) {
        title_ = title;
        emit conversationChanged();
    }
    return true;
}

bool ChatController::deleteConversation(qint64 id) {
    if (!store_) return false;
    if (id == conversationId_) newConversation();
    return store_->deleteConversation(id);
}

bool ChatController::exportConversation(qint64 id, const QUrl& file, const QString& format) {
    if (!store_) return false;
    const QString path = file.isLocalFile() ? file.toLocalFile() : file.toString();
    if (!store_->exportConversation(id, path, format)) {
        setError(tr("Export failed: %1").arg(store_->lastError()));
        return false;
    }
    return true;
}

}  // namespace inferscope
