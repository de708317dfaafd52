#include "remote/remote_session.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QNetworkReply>
#include <QNetworkRequest>

namespace inferscope {
namespace {

QNetworkRequest requestFor(const RemoteServer& server, const QString& path) {
    QUrl url = server.base;
    url.setPath(url.path() + path);
    QNetworkRequest r(url);
    r.setHeader(QNetworkRequest::ContentTypeHeader, QStringLiteral("application/json"));
    if (!server.apiKey.isEmpty()) r.setRawHeader("Authorization", "Bearer " + server.apiKey.toUtf8());
    r.setAttribute(QNetworkRequest::RedirectPolicyAttribute, QNetworkRequest::NoLessSafeRedirectPolicy);
    return r;
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
    return url;
}

QString RemoteSession::httpError(QNetworkReply* reply, const QByteArray& body) const {
    const int status = reply->attribute(QNetworkRequest::HttpStatusCodeAttribute).toInt();
    const QString where = server_.base.toString();
    const QString said = errorMessageOf(body);
    if (status == 401)
        return server_.apiKey.isEmpty() ? tr("%1 needs an API key (401 Unauthorized)%2").arg(where, said.isEmpty() ? QString() : ": " + said)
                                        : tr("%1 refused the API key (401 Unauthorized)%2").arg(where, said.isEmpty() ? QString() : ": " + said);
    if (status == 0)
        return tr("Could not reach %1: %2. Is the server running, and is the address right?").arg(where, reply->errorString());
    if (!said.isEmpty()) return tr("%1 answered %2: %3").arg(where).arg(status).arg(said);
    return tr("%1 answered HTTP %2 (%3)").arg(where).arg(status).arg(reply->errorString());
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
    QNetworkReply* reply = network_.get(requestFor(server, QStringLiteral("/v1/models")));
    modelsReply_ = reply;
    connect(reply, &QNetworkReply::finished, this, [this, reply] {
        reply->deleteLater();
        if (reply != modelsReply_) return;
        const QByteArray body = reply->readAll();
        const int status = reply->attribute(QNetworkRequest::HttpStatusCodeAttribute).toInt();
        if (reply->error() != QNetworkReply::NoError && status != 200) {
            emit modelsFailed(status == 404 ? tr("%1 is not an OpenAI-compatible server: GET /v1/models answered 404").arg(server_.base.toString())
                                            : httpError(reply, body));
            return;
        }
        const auto ids = parseModelList(body);
        if (!ids) {
            emit modelsFailed(tr("%1 is not an OpenAI-compatible server: GET /v1/models gave no model list").arg(server_.base.toString()));
            return;
        }
        if (ids->isEmpty()) {
            emit modelsFailed(tr("%1 lists no models").arg(server_.base.toString()));
            return;
        }
        emit modelsListed(*ids);
    });
}

void RemoteSession::startChat(quint64 jobId, const RemoteChatRequest& request) {
    abort();
    jobId_ = jobId;
    parser_ = OpenAiStreamParser();
    summary_ = GenerationSummary();
    firstTokenUs_ = -1;
    lastTokenUs_ = 0;
    steps_ = 0;
    stagesReported_ = false;
    sawData_ = false;
    finishReason_.clear();
    streamError_.clear();
    const QByteArray body = QJsonDocument(chatBody(server_.model, request)).toJson(QJsonDocument::Compact);
    QNetworkRequest r = requestFor(server_, QStringLiteral("/v1/chat/completions"));
    r.setRawHeader("Accept", "text/event-stream");
    clock_.start();
    reply_ = network_.post(r, body);
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

void RemoteSession::onChatData() {
    const int status = reply_->attribute(QNetworkRequest::HttpStatusCodeAttribute).toInt();
    if (status != 200) return;  // an error body: read whole at the end
    // Not an event stream (a server that answers whole): read at the end as one answer.
    if (!reply_->header(QNetworkRequest::ContentTypeHeader).toString().startsWith(QLatin1String("text/event-stream"))) return;
    StepBatch batch;
    for (const StreamEvent& e : parser_.feed(reply_->readAll())) handle(e, batch);
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
    QNetworkReply* reply = reply_;
    reply_ = nullptr;
    reply->deleteLater();
    const int status = reply->attribute(QNetworkRequest::HttpStatusCodeAttribute).toInt();
    if (status != 200 || (reply->error() != QNetworkReply::NoError && !sawData_)) {
        failJob(httpError(reply, reply->readAll()));
        return;
    }
    StepBatch batch;
    const QByteArray rest = reply->readAll();
    if (!reply->header(QNetworkRequest::ContentTypeHeader).toString().startsWith(QLatin1String("text/event-stream")))
        handle(parseStreamData(rest), batch);  // the whole answer as one JSON object
    else
        for (const StreamEvent& e : parser_.feed(rest)) handle(e, batch);
    for (const StreamEvent& e : parser_.finish()) handle(e, batch);
    if (!batch.steps.empty()) emit stepsReady(jobId_, batch);
    if (!streamError_.isEmpty() && steps_ == 0) {
        failJob(tr("%1 reported an error: %2").arg(server_.base.toString(), streamError_));
        return;
    }
    if (!streamError_.isEmpty() || (reply->error() != QNetworkReply::NoError)) {
        // Cut off mid-answer: what arrived is kept, as a stopped answer.
        failJob(tr("The answer from %1 stopped early: %2").arg(server_.base.toString(), streamError_.isEmpty() ? reply->errorString() : streamError_));
        return;
    }
    if (finishReason_.isEmpty() && !parser_.done()) {  // the connection ended mid-answer
        failJob(tr("The answer from %1 ended before it was complete (the connection closed without a finish reason)").arg(server_.base.toString()));
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
