#pragma once
// ChatController: the conversation logic. Turns messages into prompt chunks with the chat
// template (or raw text in completion mode), starts generations through EngineController,
// streams answers into ChatModel, and keeps every completed message in the ChatStore.
//
// Each message remembers the exact tokens it put in the context, so a new turn, a regenerated
// answer or an edited message sends a prompt whose unchanged prefix the engine finds in its KV
// cache: only the new part is prefilled (cacheNote says how much was reused).
//
// The parts: the prompt's chunks and an answer's context tokens are PromptBuilder's
// (core/engine/prompt_builder.h), messages to and from the store's rows ConversationMapper's, an
// answer's figures AnswerStats. chat_controller.cpp starts answers (send, regenerate, continue,
// branch), chat_controller_generation.cpp streams them in from the job's events,
// chat_controller_prompt.cpp renders what a job sends (chunks for the local engine, messages for a
// server); chat_controller_conversations.cpp keeps the conversation in the ChatStore and continues
// edits in new conversations.

#include <QObject>
#include <QPointer>
#include <QQmlEngine>
#include <QUrl>
#include <optional>

#include "chat/chat_model.h"
#include "store/chat_store.h"
#include "engine/chat_template.h"
#include "engine/engine_types.h"
#include "engine/inference_backend.h"
#include "engine/prompt_builder.h"
#include "app/qml_singleton.h"

namespace inferscope {

class StructuredOutput;
class SpeculativeSettings;

class ChatStore;
class EngineController;
class SamplingSettings;

class ChatController : public QObject, public QmlSingleton<ChatController> {
    Q_OBJECT
    QML_ELEMENT
    QML_SINGLETON
    Q_PROPERTY(ChatModel* messages READ messages CONSTANT)
    Q_PROPERTY(inferscope::ChatStore* store READ store CONSTANT)  // for the sidebar's ConversationListModel
    Q_PROPERTY(Mode mode READ mode WRITE setMode NOTIFY settingsChanged)  // ChatController.Chat | ChatController.Completion
    Q_PROPERTY(QString templateChoice READ templateChoice WRITE setTemplateChoice NOTIFY settingsChanged)  // "auto" or a name
    Q_PROPERTY(QString effectiveTemplate READ effectiveTemplate NOTIFY settingsChanged)
    Q_PROPERTY(QStringList templateNames READ templateNames CONSTANT)
    Q_PROPERTY(QString systemPrompt READ systemPrompt WRITE setSystemPrompt NOTIFY settingsChanged)
    Q_PROPERTY(bool generating READ generating NOTIFY generatingChanged)
    Q_PROPERTY(bool canSend READ canSend NOTIFY canSendChanged)
    Q_PROPERTY(bool canRegenerate READ canRegenerate NOTIFY canSendChanged)
    // The last answer was cut off (finish Failed, kept and stored) and the model that made it is
    // the one loaded: it can be continued from where it stopped.
    Q_PROPERTY(bool canContinue READ canContinue NOTIFY canSendChanged)
    Q_PROPERTY(QString cacheNote READ cacheNote NOTIFY cacheNoteChanged)
    Q_PROPERTY(qint64 conversationId READ conversationId NOTIFY conversationChanged)
    Q_PROPERTY(QString title READ title NOTIFY conversationChanged)
    Q_PROPERTY(QString lastError READ lastError NOTIFY lastErrorChanged)
    // What happened when the conversation database was opened (damage recovered, lock...), or "".
    Q_PROPERTY(QString storeMessage READ storeMessage WRITE setStoreMessage NOTIFY storeMessageChanged)

public:
    // Chat: every message is wrapped in the template's turn markers; Completion: the model
    // continues the text as written. The store keeps the names "chat" and "completion".
    enum class Mode { Chat, Completion };
    Q_ENUM(Mode)
    static QString modeName(Mode mode);
    // As read from the store: "chat" is Chat, anything else (what completion conversations of
    // every version stored) Completion.
    static Mode modeFromName(const QString& name);

    // engine and store (which may be null) must outlive the controller.
    ChatController(EngineController* engine, SamplingSettings* sampling, ChatStore* store, QObject* parent = nullptr);
    // Closing the window mid-answer: the answer shown so far is kept as a stopped ("cancelled")
    // answer and saved, as if Stop had been pressed; the engine is told to stop.
    ~ChatController() override;

    ChatModel* messages() { return &model_; }
    ChatStore* store() const { return store_; }
    EngineController* engine() const { return engine_; }
    Mode mode() const { return mode_; }
    void setMode(Mode mode);
    QString templateChoice() const { return templateChoice_; }
    void setTemplateChoice(const QString& choice);
    QString effectiveTemplate() const { return QString::fromLatin1(chatTemplateName(chatTemplate().kind).data()); }
    QStringList templateNames() const;
    QString systemPrompt() const { return systemPrompt_; }
    void setSystemPrompt(const QString& prompt);
    bool generating() const { return !active_.isNull(); }
    bool canSend() const;
    bool canRegenerate() const;
    bool canContinue() const;
    QString cacheNote() const { return cacheNote_; }
    qint64 conversationId() const { return conversationId_; }
    QString title() const { return title_; }
    QString lastError() const { return lastError_; }
    QString storeMessage() const { return storeMessage_; }
    void setStoreMessage(const QString& message) {
        storeMessage_ = message;
        emit storeMessageChanged();
    }

    // False (with lastError) when the answer cannot start; a message that cannot fit the context
    // even alone is refused before it joins the conversation (tooLongError).
    Q_INVOKABLE bool send(const QString& text);
    // Asked by the composer before it pastes: false (with lastError) when the clipboard's text
    // could never fit the context. Laying it out would freeze the window first (the text field
    // takes about 10 s for 10 MB), and sending it would be refused anyway.
    Q_INVOKABLE bool pasteAllowed();
    Q_INVOKABLE void stop();
    Q_INVOKABLE bool regenerate();
    // A new version of the interrupted last answer: what arrived, then the model goes on.
    Q_INVOKABLE bool continueAnswer();
    // Sends `text` in place of user message `row`. What followed it stays in the stored
    // conversation; the edit continues in a new one, "Title (edited)", with the turns before it.
    Q_INVOKABLE bool editAndResend(int row, const QString& text);
    // Continues answer `row` from step `step` with `tokenId` instead of the token picked there: the
    // KV cache is truncated to that position and decoding resumes (no new prefill of the prompt).
    // The previous continuation stays as another version of the answer; when later turns follow it,
    // they stay in the stored conversation and the branch continues in "Title (version n)".
    Q_INVOKABLE bool branchFrom(int row, int step, int tokenId);
    // The same, but `writer` (the comparison's second model, loaded beside this one: its origin,
    // GenerationJob::otherModel) writes the new tokens, and the new version keeps it as its origin.
    bool branchWithModel(int row, int step, int tokenId, const AnswerOrigin& writer);
    // "stories260K (/path/stories260K.gguf)", "qwen @ http://host:8080": which model an answer needs.
    static QString originLabel(const AnswerOrigin& origin);
    // Shows another version of an answer (regenerated or branched); the next turn continues it.
    // When later turns follow the answer in a stored conversation they stay there, and the version
    // opens in a new conversation ("Title (version n)") with the turns up to the answer.
    Q_INVOKABLE bool showVariant(int row, int variant);
    // Mid-answer, the answer so far is kept in its conversation as a stopped one (as on closing).
    Q_INVOKABLE void newConversation();
    Q_INVOKABLE bool openConversation(qint64 id);
    Q_INVOKABLE bool renameConversation(qint64 id, const QString& title);
    Q_INVOKABLE bool deleteConversation(qint64 id);
    Q_INVOKABLE bool exportConversation(qint64 id, const QUrl& file, const QString& format);
    // Dismisses the error and database notices.
    Q_INVOKABLE void clearMessages() {
        setError(QString());
        setStoreMessage(QString());
    }

    // Fixed sampler parameters for every answer (the --screenshot mode runs greedy); nullopt: the settings panel's.
    void setSamplerOverride(std::optional<SamplerParams> params) { samplerOverride_ = std::move(params); }
    // The Settings' structured output: each answer on a backend that tokenizes gets its grammar
    // (null: none; AppGraph sets it).
    void setStructuredOutput(const StructuredOutput* structured) { structured_ = structured; }
    // The Settings' speculative decoding: each answer on a backend that drafts (BackendAbilities::drafts)
    // gets its choices (null: none; AppGraph sets it).
    void setSpeculative(const SpeculativeSettings* speculative) { speculative_ = speculative; }
    // A fixed answer length (the --screenshot mode's --max-tokens); nullopt: the settings panel's.
    void setMaxTokensOverride(std::optional<int32_t> maxTokens) { maxTokensOverride_ = maxTokens; }
    ChatTemplate chatTemplate() const;
    // "" when text could fit the loaded model's context; else why not. Decided from its length in
    // bytes alone (LoadedModel::maxTokenBytes), so a 10 MB paste is refused at once.
    QString tooLongError(const QString& text, const QString& what = QString()) const;

    // What answer `row` was generated from — the messages before it, with the tokens they put in
    // the context, rendered by the current template and system prompt (as its generation sent
    // them unless those changed since) — and its tokens, one per step: for re-running it
    // (kv_cost_model.h). nullopt for a row that is not a finished answer with steps, or without a model.
    struct AnswerContext {
        std::vector<PromptChunk> chunks;
        std::vector<int32_t> answer;
    };
    std::optional<AnswerContext> answerContext(int row) const;
    // A job for `text` alone as the first turn (side by side): the template, system prompt,
    // sampler, length and thread count of the next answer; its chunks rendered from the text.
    GenerationJob singleTurnJob(const QString& text) const;

signals:
    void settingsChanged();
    void generatingChanged();
    void canSendChanged();
    void cacheNoteChanged();
    void conversationChanged();
    void lastErrorChanged();
    void storeMessageChanged();
    void answerFinished(int row);  // an answer completed (any finish reason)

private:
    // The text of every token `steps` name (picks and candidates), from the model answering now.
    std::map<int32_t, TokenText> tokenTextsOf(const std::vector<StepRecord>& steps) const;
    // Sends messages [0, answerRow) — plus `prefix`, the answer's first tokens when branching —
    // and streams the answer into row answerRow (appended when it is -1).
    // A branch or continuation goes on under `kept`, its answer's own structured output (from after
    // the prefix's bytes); other answers under the setting's.
    bool startAnswer(int answerRow = -1, std::vector<StepRecord> prefix = {}, const StructuredConstraint& kept = {});
    std::vector<PromptChunk> contextChunks(const PromptBuilder& prompt, size_t contextRows) const;
    // A server's request: the system prompt and messages [0, contextRows) as (role, text).
    std::vector<std::pair<std::string, std::string>> remoteMessages(size_t contextRows) const;
    // Ends the active answer here as if the engine had reported it stopped: what was shown is
    // kept and saved, and whatever the engine still sends for the job is ignored.
    void finishInterrupted();
    void onModelChanged();
    // The answer's generation (its GenerationHandle's signals, connected while it is active_).
    void onPromptPrepared(const QList<QList<int>>& chunkTokens);
    void onPrefillFinished(const PrefillStats& stats);
    void onStepsArrived(const StepBatch& batch);
    void onGenerationFinished(const GenerationSummary& summary);
    void onGenerationFailed(const QString& message);
    void release();  // the generation is no longer this controller's: what still comes is not heard
    void setError(const QString& message);
    void setCacheNote(const QString& note);
    // Stores row at its position (replacing anything stored there and after, such as the previous
    // version of an answer), after any earlier row whose save failed: the stored conversation is
    // always a prefix of the one shown, and a failed save (a full disk) is retried at the next
    // one. False (the error shown) when something is left unsaved.
    bool saveMessage(int row);
    // The stored conversation stays as it is; the window goes on in a new stored conversation named
    // `title` holding rows [0, keep) with all their versions (firstText names it when keep is 0).
    // Rows from `keep` on leave the window only. False (the original reopened, `failure` with the
    // reason shown) when the copy could not be made; nothing half-made is left.
    bool continueInNewConversation(int keep, const QString& title, const QString& failure, const QString& firstText = QString());
    bool saveRow(int row);
    void saveConversationSettings();
    bool ensureConversation(const QString& firstText);
    // The template, system prompt and BOS rule of the next prompt (core/engine/prompt_builder.h).
    PromptBuilder promptBuilder() const;

    EngineController* engine_;
    SamplingSettings* sampling_;
    const StructuredOutput* structured_ = nullptr;
    // A branch of an answer held to structured output: the kept bytes and the chosen token must be
    // what its constraint allows (else the reason is said, and false).
    bool branchKeepsItsConstraint(const ChatMessage& answer, const std::vector<StepRecord>& prefix);
    bool structuredReady();  // false, saying why, when the structured output setting keeps answers from starting
    const SpeculativeSettings* speculative_ = nullptr;
    bool speculativeReady();  // false, saying why, when the speculative setting names no usable draft model
    ChatStore* store_;  // may be null: nothing is kept
    ChatModel model_;
    Mode mode_ = Mode::Completion;
    QString templateChoice_ = QStringLiteral("auto");
    QString systemPrompt_;
    std::optional<SamplerParams> samplerOverride_;
    std::optional<int32_t> maxTokensOverride_;
    QPointer<GenerationHandle> active_;
    int answerRow_ = -1;
    std::vector<StepRecord> answerPrefix_;  // a branch's kept steps (its new steps are numbered after them)
    std::optional<AnswerOrigin> writer_;    // during branchWithModel: who writes the branch
    std::vector<int> chunkRows_;  // the message row of each chunk of the active job
    SamplerParams activeSampler_;
    PrefillStats activePrefill_;
    qint64 conversationId_ = 0;
    QString title_;
    QString conversationModel_;  // model path the stored tokens belong to
    QString cacheNote_;
    QString lastError_;
    QString storeMessage_;
};

}  // namespace inferscope
