#pragma once
// RemoteBackend: an OpenAI-compatible server as an InferenceBackend (inference_backend.h), through
// RemoteSession. The server applies its own template to messages and keeps its cache and its
// insides to itself; its tokens are the remote vocabulary's ids (remote/remote_vocabulary.h).
// EngineController lists models and connects through session().

#include "engine/inference_backend.h"
#include "remote/remote_session.h"

namespace inferscope {

class RemoteBackend : public InferenceBackend {
    Q_OBJECT
public:
    explicit RemoteBackend(QObject* parent = nullptr);

    RemoteSession& session() { return session_; }
    const RemoteSession& session() const { return session_; }
    // A new connection: its steps have not yet said whether they carry the sampler's stages.
    void resetStages();

    AnswerBackend kind() const override { return AnswerBackend::Remote; }
    BackendAbilities abilities() const override { return {.ownTemplate = true, .overNetwork = true}; }
    bool start(const GenerationJob& job) override;
    void cancel(quint64) override { session_.abort(); }  // the connection is closed; the answer so far ends as Cancelled
    std::optional<TokenText> tokenText(int32_t id) const override;
    void describe(AnswerOrigin& origin, const LoadedModel& model, const KvCacheStats& kv) const override;
    bool reportsStages() const override { return stagesReported_; }
    void inspect(InspectionRequest request) override;

private:
    RemoteSession session_;
    bool stagesReported_ = false;  // the steps carried Inferscope's stage extension
};

}  // namespace inferscope
