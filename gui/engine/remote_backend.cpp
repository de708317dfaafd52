#include "engine/remote_backend.h"

namespace inferscope {

RemoteBackend::RemoteBackend(QObject* parent) : InferenceBackend(parent) {
    connect(&session_, &RemoteSession::prefillFinished, this, &InferenceBackend::prefillFinished);
    connect(&session_, &RemoteSession::stepsReady, this, [this](quint64 jobId, const StepBatch& batch) {
        if (!stagesReported_ && session_.stagesReported()) {
            stagesReported_ = true;
            emit reportedStagesChanged();
        }
        emit stepsReady(jobId, batch);
    });
    connect(&session_, &RemoteSession::generationFinished, this, &InferenceBackend::generationFinished);
    connect(&session_, &RemoteSession::generationFailed, this, &InferenceBackend::generationFailed);
}

void RemoteBackend::resetStages() {
    if (!std::exchange(stagesReported_, false)) return;
    emit reportedStagesChanged();
}

bool RemoteBackend::start(const GenerationJob& job) {
    if (job.measurement || job.messages.empty() || !job.otherModel.empty()) return false;  // no timeline experiments on a server
    RemoteChatRequest request;
    for (const auto& [role, content] : job.messages)
        request.messages.emplace_back(QString::fromStdString(role), QString::fromStdString(content));
    request.sampler = job.sampler;
    request.maxTokens = job.maxTokens;
    request.continueFinalMessage = job.continueFinalMessage;
    request.structured = job.structured;
    session_.startChat(job.id, request);
    return true;
}

std::optional<TokenText> RemoteBackend::tokenText(int32_t id) const {
    auto bytes = session_.vocabulary().bytesOf(id);
    return bytes ? std::optional<TokenText>(TokenText{std::move(*bytes), {}}) : std::nullopt;
}

void RemoteBackend::describe(AnswerOrigin& o, const LoadedModel&, const KvCacheStats&) const {
    o.backend = AnswerBackend::Remote;
    o.serverUrl = session_.server().base.toString().toStdString();
}

void RemoteBackend::inspect(InspectionRequest request) {
    // Nothing to look inside: said so, as a reply (the panels say it before asking).
    InspectionReply reply;
    reply.id = request.id;
    reply.position = request.position;
    reply.error = tr("A remote server does not expose what happens inside its model.").toStdString();
    QMetaObject::invokeMethod(this, [this, reply] { emit inspectionReady(reply); }, Qt::QueuedConnection);
}

}  // namespace inferscope
