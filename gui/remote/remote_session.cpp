#include "remote/remote_session.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QNetworkReply>
#include <QNetworkRequest>
#include <algorithm>
#include <ctime>

namespace inferscope {
namespace {

// "1 token", "3 tokens" (the app ships no translations: %n's "(s)" would show).
QString tokenCount(int n) { return n == 1 ? RemoteSession::tr("1 token") : RemoteSession::tr("%1 tokens").arg(n); }

bool isEventStream(const QNetworkReply* reply) {
    return reply->header(QNetworkRequest::ContentTypeHeader).toString().startsWith(QLatin1String("text/event-stream"));
}

QJsonObject chatBody(const QString& model, const RemoteChatRequest& request) {
    QJsonArray messages;
    for (const auto& [role, content] : request.messages) messages.append(QJsonObject{{"role", role}, {"content", content}});
    const SamplerParams& s = request.sampler;
    QJsonObject body{{"model", model},
                     {"messages", messages},
                     {"stream", true},
                     {"stream_options", QJsonObject{{"include_usage", true}}},
                     {"logprobs", true},
                     {"top_logprobs", 20},
                     {"max_tokens", request.maxTokens},
                     {"temperature", double(s.temperature)},
                     {"top_p", double(s.topP)},
                     {"seed", qint64(s.seed & 0x7fffffffffffffffULL)}};
    // Beyond OpenAI's fields: what vLLM, SGLang, llama.cpp, Ollama and ours accept (and others ignore).
    if (request.continueFinalMessage) {
        body["continue_final_message"] = true;
        body["add_generation_prompt"] = false;  // vLLM needs both
    }
    if (s.topK > 0) body["top_k"] = s.topK;
    if (s.minP > 0) body["min_p"] = double(s.minP);
    if (s.repeatPenalty != 1.0f) {
        body["repeat_penalty"] = double(s.repeatPenalty);      // llama.cpp, Ollama, Inferscope
        body["repetition_penalty"] = double(s.repeatPenalty);  // vLLM, SGLang
    }
    const StructuredConstraint& c = request.structured;
    if (c.kind == StructuredKind::Json) {
        body["response_format"] = QJsonObject{{"type", "json_object"}};
    } else if (c.kind == StructuredKind::JsonSchema) {
        const QJsonObject schema = QJsonDocument::fromJson(QByteArray::fromStdString(c.text)).object();  // compiled: valid
        body["response_format"] = QJsonObject{{"type", "json_schema"},
                                              {"json_schema", QJsonObject{{"name", "answer"}, {"strict", true}, {"schema", schema}}}};
    } else if (c.kind == StructuredKind::Gbnf) {
        body["grammar"] = QString::fromStdString(c.text);
    }
    return body;
}

}  // namespace

RemoteSession::RemoteSession(QObject* parent) : QObject(parent) {}

RemoteSession::~RemoteSession() {
    if (modelsReply_) modelsReply_->disconnect(this);  // the manager deletes its replies
    if (reply_) {
        reply_->disconnect(this);
        reply_->abort();
    }
}

QUrl RemoteSession::normalizeBase(const QString& text) {
    QString t = text.trimmed();
    if (!t.contains(QLatin1String("://"))) t.prepend(QLatin1String("http://"));
    QUrl url(t, QUrl::StrictMode);
    if (!url.isValid() || url.host().isEmpty() || (url.scheme() != QLatin1String("http") && url.scheme() != QLatin1String("https")))
        return QUrl();
    QString path = url.path();
    while (path.endsWith(QLatin1Char('/'))) path.chop(1);
    if (path.endsWith(QLatin1String("/v1"))) path.chop(3);
    url.setPath(path);
    url.setQuery(QString());
    url.setFragment(QString());
    url.setUserInfo(QString());
    return url;
}

QString RemoteSession::userInfoOf(const QString& text) {
    QString t = text.trimmed();
    if (!t.contains(QLatin1String("://"))) t.prepend(QLatin1String("http://"));
    const QUrl url(t, QUrl::StrictMode);
    if (url.userName().isEmpty() && url.password().isEmpty()) return {};
    return url.userName(QUrl::FullyDecoded) + QLatin1Char(':') + url.password(QUrl::FullyDecoded);
}

QString RemoteSession::httpError(QNetworkReply* reply, const QByteArray& body) const {
    const int status = reply->attribute(QNetworkRequest::HttpStatusCodeAttribute).toInt();
    const QString where = server_.base.toString();
    if (const QString redirect = redirectProblem(reply, where); !redirect.isEmpty()) return redirect;
    const QString said = errorMessageOf(body);
    if (status == 401)
        return server_.apiKey.isEmpty() ? tr("%1 needs an API key (401 Unauthorized)%2").arg(where, said.isEmpty() ? QString() : ": " + said)
                                        : tr("%1 refused the API key (401 Unauthorized)%2").arg(where, said.isEmpty() ? QString() : ": " + said);
    if (status == 0)
        return tr("Could not reach %1: %2. Is the server running, and is the address right?").arg(where, networkProblem(reply));
    if (!said.isEmpty()) return tr("%1 answered %2: %3").arg(where).arg(status).arg(said);
    const QString phrase = reply->attribute(QNetworkRequest::HttpReasonPhraseAttribute).toString().left(80);
    return tr("%1 answered HTTP %2%3").arg(where).arg(status).arg(phrase.isEmpty() ? QString() : QStringLiteral(" (%1)").arg(phrase));
}

void RemoteSession::listModels(const RemoteServer& server) {
    if (modelsReply_) {  // left to end on its own (aborting one that has just failed warns), unheard
        modelsReply_->disconnect(this);
        if (modelsReply_->isFinished()) modelsReply_->deleteLater();
        else connect(modelsReply_, &QNetworkReply::finished, modelsReply_, &QObject::deleteLater);
    }
    server_ = server;
    if (!server.base.isValid()) {
        emit modelsFailed(tr("Not a server address: give one like http://127.0.0.1:8080"));
        return;
    }
    QNetworkReply* reply = network_.get(remoteRequest(server, QStringLiteral("/v1/models")));
    reply->setReadBufferSize(kReadBufferBytes);
    modelsReply_ = reply;
    modelsGuard_ = new ReplyGuard(reply, timeouts_, kMaxModelListBytes);
    modelsBody_.clear();
    connect(reply, &QNetworkReply::readyRead, this, [this, reply] { onModelsData(reply); });
    connect(reply, &QNetworkReply::finished, this, [this, reply] { onModelsFinished(reply); });
}

void RemoteSession::onModelsData(QNetworkReply* reply) {
    if (reply != modelsReply_ || modelsGuard_->problem() != ReplyGuard::Problem::None) return;
    const QByteArray bytes = reply->readAll();
    if (modelsGuard_->take(bytes.size())) modelsBody_ += bytes;
}

void RemoteSession::onModelsFinished(QNetworkReply* reply) {
    reply->deleteLater();
    if (reply != modelsReply_) return;
    onModelsData(reply);
    const QByteArray body = std::exchange(modelsBody_, QByteArray());
    const QString where = server_.base.toString();
    if (modelsGuard_->problem() != ReplyGuard::Problem::None) {
        emit modelsFailed(modelsGuard_->describe(where));
        return;
    }
    const int status = reply->attribute(QNetworkRequest::HttpStatusCodeAttribute).toInt();
    if (reply->error() != QNetworkReply::NoError && status != 200) {
        emit modelsFailed(status == 404 ? tr("%1 is not an OpenAI-compatible server: GET /v1/models answered 404").arg(where)
                                        : httpError(reply, body.left(kMaxErrorBodyBytes)));
        return;
    }
    const auto ids = parseModelList(body);
    if (!ids) {
        emit modelsFailed(tr("%1 is not an OpenAI-compatible server: GET /v1/models gave no model list").arg(where));
        return;
    }
    if (ids->isEmpty()) {
        emit modelsFailed(tr("%1 lists no models").arg(where));
        return;
    }
    emit modelsListed(*ids);
}

void RemoteSession::startChat(quint64 jobId, const RemoteChatRequest& request) {
    abort();
    jobId_ = jobId;
    busiestReadUs_ = 0;
    parser_ = OpenAiStreamParser();
    summary_ = GenerationSummary();
    firstTokenUs_ = -1;
    lastTokenUs_ = 0;
    steps_ = 0;
    stagesReported_ = false;
    sawData_ = false;
    finishReason_.clear();
    streamError_.clear();
    body_.clear();
    wholeParts_.clear();
    wholeBytes_ = 0;
    bodyCut_ = false;
    tooMany_.clear();
    maxSteps_ = std::max<int32_t>(0, request.maxTokens) + kExtraTokens;
    const QByteArray body = QJsonDocument(chatBody(server_.model, request)).toJson(QJsonDocument::Compact);
    QNetworkRequest r = remoteRequest(server_, QStringLiteral("/v1/chat/completions"));
    r.setRawHeader("Accept", "text/event-stream");
    clock_.start();
    reply_ = network_.post(r, body);
    reply_->setReadBufferSize(kReadBufferBytes);  // each arrival bounded: the GUI thread reads it
    guard_ = new ReplyGuard(reply_, timeouts_, kMaxStreamBytes);
    connect(reply_, &QNetworkReply::readyRead, this, &RemoteSession::onChatData);
    connect(reply_, &QNetworkReply::finished, this, &RemoteSession::onChatFinished);
}

void RemoteSession::abort() {
    if (!reply_) return;
    QNetworkReply* reply = reply_;
    reply->disconnect(this);
    reply->abort();  // closes the connection: the server cancels the generation
    reply->deleteLater();
    reply_ = nullptr;
    // Reported after the caller's turn, as the local engine's cancel is: a caller may still be
    // looking at the answer when it stops it.
    const quint64 job = std::exchange(jobId_, 0);
    GenerationSummary summary = summary_;
    summary.reason = FinishReason::Cancelled;
    QMetaObject::invokeMethod(this, [this, job, summary] { emit generationFinished(job, summary); }, Qt::QueuedConnection);
}

// Reading stops at a limit, or once the stream held something that is not an answer (an error
// event, an event too large or not JSON): the connection is closed, the rest never read.
bool RemoteSession::stopping() const {
    return bodyCut_ || !tooMany_.isEmpty() || !streamError_.isEmpty() || guard_->problem() != ReplyGuard::Problem::None;
}

namespace {
qint64 threadCpuUs() {
    timespec t{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return qint64(t.tv_sec) * 1'000'000 + t.tv_nsec / 1000;
}
// Adds the CPU time of the scope to `busiest` when it is the longest yet.
struct CpuSpan {
    qint64& busiest;
    qint64 start = threadCpuUs();
    ~CpuSpan() { busiest = std::max(busiest, threadCpuUs() - start); }
};
}  // namespace

void RemoteSession::onChatData() {
    if (!reply_ || stopping()) return;
    CpuSpan span{busiestReadUs_};
    const QByteArray bytes = reply_->readAll();
    if (!guard_->take(bytes.size())) return;
    const int status = reply_->attribute(QNetworkRequest::HttpStatusCodeAttribute).toInt();
    if (status != 200) {  // an error body: its start says what went wrong, the rest is not read
        body_ += bytes.left(kMaxErrorBodyBytes - body_.size());
        if (body_.size() >= kMaxErrorBodyBytes) {
            bodyCut_ = true;
            QMetaObject::invokeMethod(reply_, &QNetworkReply::abort, Qt::QueuedConnection);
        }
        return;
    }
    if (!isEventStream(reply_)) {  // a server that answers whole: one JSON object, read at the end
        // Kept in pieces, joined once at the end: no copy of all that came at every arrival.
        wholeBytes_ += bytes.size();
        wholeParts_.push_back(bytes);
        if (wholeBytes_ > kMaxWholeAnswerBytes) guard_->exceeded(kMaxWholeAnswerBytes);
        return;
    }
    StepBatch batch;
    for (const StreamEvent& e : parser_.feed(bytes)) {
        handle(e, batch);
        if (!tooMany_.isEmpty()) break;
    }
    if (!streamError_.isEmpty()) QMetaObject::invokeMethod(reply_, &QNetworkReply::abort, Qt::QueuedConnection);
    if (!batch.steps.empty()) emit stepsReady(jobId_, batch);
}

void RemoteSession::handle(const StreamEvent& e, StepBatch& batch) {
    sawData_ = true;
    if (e.kind == StreamEvent::Kind::Error) {
        if (streamError_.isEmpty()) streamError_ = e.error;
        return;
    }
    if (e.kind == StreamEvent::Kind::Done) return;
    if (e.usage) {
        summary_.prefill.nPrompt = e.usage->promptTokens;
        summary_.prefill.nComputed = e.usage->promptTokens;
    }
    if (!e.finishReason.isEmpty()) finishReason_ = e.finishReason;
    std::vector<StepRecord> steps;
    for (const RemoteToken& t : e.tokens) stagesReported_ = stagesReported_ || !t.extension.isEmpty();
    for (const RemoteToken& t : e.tokens) steps.push_back(remoteStep(t, steps_ + int32_t(steps.size()), steps_ + int32_t(steps.size()), vocabulary_));
    if (steps.empty() && !e.content.isEmpty())  // text without logprobs
        steps.push_back(remoteTextStep(e.content.toUtf8(), steps_, steps_, vocabulary_));
    if (steps.empty()) return;
    if (steps_ + int32_t(steps.size()) > maxSteps_) {  // an answer that does not end: closed, what came is kept
        tooMany_ = tr("%1 kept sending tokens past the %2 asked for; the connection was closed.").arg(server_.base.toString()).arg(maxSteps_ - kExtraTokens);
        QMetaObject::invokeMethod(reply_, &QNetworkReply::abort, Qt::QueuedConnection);
        return;
    }
    const qint64 now = clock_.nsecsElapsed() / 1000;
    if (firstTokenUs_ < 0) {
        firstTokenUs_ = now;
        summary_.timeToFirstTokenUs = now;
        summary_.prefill.us = now;
        emit prefillFinished(jobId_, summary_.prefill);
    } else {
        // The client's time since the previous arrival, shared by the tokens that came together.
        const qint64 each = (now - lastTokenUs_) / qint64(steps.size());
        for (StepRecord& s : steps) s.forwardUs = std::max<qint64>(1, each);
        summary_.nDecodePasses += int32_t(steps.size());
        summary_.decodeUs = now - firstTokenUs_;
    }
    lastTokenUs_ = now;
    const int32_t added = int32_t(steps.size());
    for (StepRecord& s : steps) {
        summary_.tokens.push_back(s.sample.id);
        summary_.text += s.piece;
        batch.steps.push_back(std::move(s));
    }
    steps_ += added;
    summary_.nGenerated = steps_;
}

void RemoteSession::onChatFinished() {
    onChatData();  // what is still buffered
    QNetworkReply* reply = reply_;
    reply_ = nullptr;
    reply->deleteLater();
    const QString where = server_.base.toString();
    const int status = reply->attribute(QNetworkRequest::HttpStatusCodeAttribute).toInt();
    const bool eventStream = status == 200 && isEventStream(reply);
    StepBatch batch;
    if (!stopping() && eventStream)
        for (const StreamEvent& e : parser_.finish()) handle(e, batch);
    if (!batch.steps.empty()) emit stepsReady(jobId_, batch);
    if (guard_->problem() != ReplyGuard::Problem::None) {
        failJob(steps_ == 0 ? guard_->describe(where) : tr("The answer stopped after %1: %2").arg(tokenCount(steps_), guard_->describe(where)));
        return;
    }
    if (!tooMany_.isEmpty()) {
        failJob(tooMany_);
        return;
    }
    if (status != 200) {
        failJob(httpError(reply, body_));
        return;
    }
    if (reply->error() != QNetworkReply::NoError && !sawData_ && streamError_.isEmpty()) {
        failJob(tr("%1 accepted the request, then %2 before any answer arrived.").arg(where, networkProblem(reply)));
        return;
    }
    if (!eventStream) {
        handle(parseStreamData(wholeParts_.join()), batch);  // the whole answer as one JSON object
        if (!batch.steps.empty()) emit stepsReady(jobId_, batch);
    }
    if (!streamError_.isEmpty() && steps_ == 0) {
        failJob(tr("%1 reported an error: %2").arg(where, streamError_));
        return;
    }
    if (!streamError_.isEmpty()) {
        failJob(tr("The answer from %1 stopped after %2: the server reported an error: %3").arg(where, tokenCount(steps_), streamError_));
        return;
    }
    if (reply->error() != QNetworkReply::NoError) {
        failJob(tr("The answer from %1 stopped after %2: %3.").arg(where, tokenCount(steps_), networkProblem(reply)));
        return;
    }
    if (finishReason_.isEmpty() && !parser_.done()) {  // the connection ended mid-answer
        failJob(tr("The answer from %1 stopped after %2: the connection closed before the server said the answer was complete.").arg(where, tokenCount(steps_)));
        return;
    }
    finishJob(finishReason_ == QLatin1String("length") ? FinishReason::MaxTokens : FinishReason::EndOfGeneration);
}

void RemoteSession::finishJob(FinishReason reason) {
    reply_ = nullptr;
    const quint64 job = std::exchange(jobId_, 0);
    if (job == 0) return;
    summary_.reason = reason;
    emit generationFinished(job, summary_);
}

void RemoteSession::failJob(const QString& message) {
    reply_ = nullptr;
    const quint64 job = std::exchange(jobId_, 0);
    if (job != 0) emit generationFailed(job, message);
}

}  // namespace inferscope
