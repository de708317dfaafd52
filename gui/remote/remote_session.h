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
//
// The server is not trusted: redirects are followed only to the same scheme, host and port (the
// API key never leaves the server it was given for: remote_request.h); every reply has deadlines and a byte cap
// (reply_guard.h); a model list is at most 4 MiB, an error body is read up to 64 KiB, an answer
// sent whole up to 16 MiB, a stream up to 128 MiB and 64 tokens past the ones asked for, each
// event up to 1 MiB (openai_stream_parser.h). Past a limit the connection is closed and the
// message says which limit it was.

#include <QByteArrayList>
#include <QElapsedTimer>
#include <QNetworkAccessManager>
#include <QObject>
#include <QPointer>
#include <QUrl>
#include <utility>
#include <vector>

#include "engine/engine_types.h"
#include "remote/openai_stream_parser.h"
#include "remote/remote_request.h"  // RemoteServer, the requests' credentials and redirect policy
#include "remote/reply_guard.h"
#include "remote/remote_vocabulary.h"

class QNetworkReply;

namespace inferscope {

struct RemoteChatRequest {
    std::vector<std::pair<QString, QString>> messages;  // (role: "system" | "user" | "assistant", content)
    SamplerParams sampler;
    int32_t maxTokens = 256;
    // The last message is the answer so far (a branch): the server continues it instead of
    // answering anew (vLLM's continue_final_message; llama.cpp's server and ours do it by default).
    bool continueFinalMessage = false;
    // Structured output: JSON as OpenAI's response_format (json_object, or json_schema with
    // strict), a grammar as llama.cpp's `grammar` (GBNF), which ours accepts too.
    StructuredConstraint structured;
};

class RemoteSession : public QObject {
    Q_OBJECT
public:
    explicit RemoteSession(QObject* parent = nullptr);
    ~RemoteSession() override;

    // "127.0.0.1:8080", "http://host:8080/", "http://host:8080/v1" → "http://host:8080"; an
    // invalid URL stays invalid (the caller says so). User info ("user:pw@") is dropped: the
    // base is what is shown and stored; userInfoOf() keeps the credentials for this run.
    static QUrl normalizeBase(const QString& text);
    static QString userInfoOf(const QString& text);

    // What each reply may take (the caps are fixed, see above).
    static constexpr qint64 kMaxModelListBytes = 4 << 20;
    static constexpr qint64 kMaxErrorBodyBytes = 64 << 10;
    static constexpr qint64 kMaxWholeAnswerBytes = 16 << 20;
    static constexpr qint64 kMaxStreamBytes = qint64(128) << 20;
    // What Qt Network holds unread for us at most: one readyRead never hands over more.
    static constexpr qint64 kReadBufferBytes = 256 << 10;
    static constexpr int32_t kExtraTokens = 64;
    void setTimeouts(const RemoteTimeouts& timeouts) { timeouts_ = timeouts; }
    const RemoteTimeouts& timeouts() const { return timeouts_; }

    // Lists the server's models: modelsListed or modelsFailed (a message a person can act on:
    // unreachable, 401, not an OpenAI server). A newer call replaces an unanswered one.
    void listModels(const RemoteServer& server);

    void setServer(const RemoteServer& server) { server_ = server; }
    const RemoteServer& server() const { return server_; }
    // Streams one answer for job `jobId`; its events name the job.
    void startChat(quint64 jobId, const RemoteChatRequest& request);
    // The most CPU time (this thread's, µs) one arrival of the current answer took to read, parse
    // and hand on: what the GUI thread spends per readyRead, whatever the server sends.
    qint64 busiestReadUs() const { return busiestReadUs_; }
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
    void onModelsData(QNetworkReply* reply);
    void onModelsFinished(QNetworkReply* reply);
    void onChatData();
    void onChatFinished();
    bool stopping() const;
    void handle(const StreamEvent& event, StepBatch& batch);
    void finishJob(FinishReason reason);
    void failJob(const QString& message);
    QString httpError(QNetworkReply* reply, const QByteArray& body) const;

    QNetworkAccessManager network_;
    RemoteServer server_;
    RemoteVocabulary vocabulary_;
    QPointer<QNetworkReply> modelsReply_;
    QPointer<QNetworkReply> reply_;
    QPointer<ReplyGuard> modelsGuard_, guard_;
    QByteArray modelsBody_;
    QByteArray body_;             // an error body (≤ 64 KiB)
    QByteArrayList wholeParts_;   // an answer sent whole (≤ 16 MiB), as it arrived
    qint64 wholeBytes_ = 0;
    bool bodyCut_ = false;        // the error body went on past 64 KiB: the rest was not read
    QString tooMany_;             // the stream went past the tokens asked for: why it was closed
    RemoteTimeouts timeouts_;
    int32_t maxSteps_ = 0;
    quint64 jobId_ = 0;
    OpenAiStreamParser parser_;
    QElapsedTimer clock_;
    qint64 firstTokenUs_ = -1, lastTokenUs_ = 0;
    GenerationSummary summary_;
    QString finishReason_;
    QString streamError_;
    int32_t steps_ = 0;
    qint64 busiestReadUs_ = 0;
    bool sawData_ = false;
    bool stagesReported_ = false;
};

}  // namespace inferscope
