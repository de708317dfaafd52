#pragma once
// RemoteSession: the app's client of an OpenAI-compatible server (vLLM, SGLang, llama.cpp's
// server, Ollama, `inferscope-cli serve`) through Qt Network. Lists the server's models
// (`GET /v1/models`) and streams a chat answer (`POST /v1/chat/completions`, `stream: true`,
// `logprobs: true`, `top_logprobs: 20`, the app's sampler settings as OpenAI fields and the
// extra ones servers accept: top_k, min_p, repeat_penalty / repetition_penalty), reporting it as
// the local engine does: prefillFinished (at the first token: the network's time to first token),
// StepBatch per arrival (StepRecord from remote_vocabulary.h; forwardUs = the client's time
// between tokens), then generationFinished or generationFailed. abort() ends a stream at once as
// Cancelled with what arrived. GUI thread only; one answer at a time.

#include <QElapsedTimer>
#include <QNetworkAccessManager>
#include <QObject>
#include <QPointer>
#include <QUrl>
#include <utility>
#include <vector>

#include "engine/engine_types.h"
#include "remote/openai_stream_parser.h"
#include "remote/remote_vocabulary.h"

class QNetworkReply;

namespace inferscope {

struct RemoteServer {
    QUrl base;        // scheme, host, port and any path before /v1 ("http://127.0.0.1:8080")
    QString apiKey;   // "" = none
    QString model;    // the id from /v1/models
};

struct RemoteChatRequest {
    std::vector<std::pair<QString, QString>> messages;  // (role: "system" | "user" | "assistant", content)
    SamplerParams sampler;
    int32_t maxTokens = 256;
    // The last message is the answer so far (a branch): the server continues it instead of
    // answering anew (vLLM's continue_final_message; llama.cpp's server and ours do it by default).
    bool continueFinalMessage = false;
};

class RemoteSession : public QObject {
    Q_OBJECT
public:
    explicit RemoteSession(QObject* parent = nullptr);
    ~RemoteSession() override;

    // "127.0.0.1:8080", "http://host:8080/", "http://host:8080/v1" → "http://host:8080"; an
    // invalid URL stays invalid (the caller says so).
    static QUrl normalizeBase(const QString& text);

    // Lists the server's models: modelsListed or modelsFailed (a message a person can act on:
    // unreachable, 401, not an OpenAI server). A newer call replaces an unanswered one.
    void listModels(const RemoteServer& server);

    void setServer(const RemoteServer& server) { server_ = server; }
    const RemoteServer& server() const { return server_; }
    // Streams one answer for job `jobId`; its events name the job.
    void startChat(quint64 jobId, const RemoteChatRequest& request);
    void abort();
    bool running() const { return !reply_.isNull(); }
    const RemoteVocabulary& vocabulary() const { return vocabulary_; }
    // This answer's tokens came with Inferscope's extension (post-sampler stages).
    bool stagesReported() const { return stagesReported_; }

signals:
    void modelsListed(const QStringList& ids);
    void modelsFailed(const QString& message);
    void prefillFinished(quint64 jobId, const inferscope::PrefillStats& stats);
    void stepsReady(quint64 jobId, const inferscope::StepBatch& batch);
    void generationFinished(quint64 jobId, const inferscope::GenerationSummary& summary);
    void generationFailed(quint64 jobId, const QString& message);

private:
    void onChatData();
    void onChatFinished();
    void handle(const StreamEvent& event, StepBatch& batch);
    void finishJob(FinishReason reason);
    void failJob(const QString& message);
    QString httpError(QNetworkReply* reply, const QByteArray& body) const;

    QNetworkAccessManager network_;
    RemoteServer server_;
    RemoteVocabulary vocabulary_;
    QPointer<QNetworkReply> modelsReply_;
    QPointer<QNetworkReply> reply_;
    quint64 jobId_ = 0;
    OpenAiStreamParser parser_;
    QElapsedTimer clock_;
    qint64 firstTokenUs_ = -1, lastTokenUs_ = 0;
    GenerationSummary summary_;
    QString finishReason_;
    QString streamError_;
    int32_t steps_ = 0;
    bool sawData_ = false;
    bool stagesReported_ = false;
};

}  // namespace inferscope
