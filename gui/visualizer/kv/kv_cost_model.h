#pragma once
// KvCostModel: "What q8_0 costs" in the KV panel. The latest answer is run again through two KV
// caches — the reference type and the tested one — on the engine's worker (core's measureKvCost,
// kv_cost.h: teacher forcing, KL(P_ref ‖ P_test) per token, as `inferscope-cli perplexity
// --compare-to-kv` measures it), cancellable; the per-token KL goes to the chat's heat map (tint
// "kvcost") and the summary to the panel. No figure is computed here. GUI thread only.
//
// The types, by default: with a block cache in use, it against f16 (what the cache in use costs);
// otherwise q8_0 (f16 when the head dim refuses blocks) against the type in use.

#include <QObject>
#include <QPointer>
#include <QQmlEngine>
#include <QStringList>

#include "chat/chat_controller.h"
#include "engine/engine_controller.h"
#include "engine/kv_jobs.h"

namespace inferscope {

class KvCostModel : public QObject {
    Q_OBJECT
    QML_ELEMENT
    Q_PROPERTY(inferscope::ChatController* chat READ chat WRITE setChat NOTIFY chatChanged)
    Q_PROPERTY(QString referenceType READ referenceType NOTIFY typesChanged)  // "f32", "f16", ...
    Q_PROPERTY(QString testType READ testType WRITE setTestType NOTIFY typesChanged)
    Q_PROPERTY(QStringList testChoices READ testChoices NOTIFY typesChanged)  // the types the model can use, but the reference
    Q_PROPERTY(bool canRun READ canRun NOTIFY stateChanged)
    Q_PROPERTY(bool running READ running NOTIFY stateChanged)
    Q_PROPERTY(QString status READ status NOTIFY stateChanged)  // what it is doing, why it cannot, or the error
    // the last result (hasResult false: none, or its answer is gone)
    Q_PROPERTY(bool hasResult READ hasResult NOTIFY resultChanged)
    Q_PROPERTY(int row READ row NOTIFY resultChanged)              // the answer measured
    Q_PROPERTY(QString resultReference READ resultReference NOTIFY resultChanged)
    Q_PROPERTY(QString resultTest READ resultTest NOTIFY resultChanged)
    Q_PROPERTY(int tokens READ tokens NOTIFY resultChanged)        // tokens compared (the answer's)
    Q_PROPERTY(double meanKl READ meanKl NOTIFY resultChanged)     // nats
    Q_PROPERTY(double p99Kl READ p99Kl NOTIFY resultChanged)
    Q_PROPERTY(double maxKl READ maxKl NOTIFY resultChanged)
    Q_PROPERTY(int sameTop1 READ sameTop1 NOTIFY resultChanged)
    Q_PROPERTY(double top1Agreement READ top1Agreement NOTIFY resultChanged)  // 0..1

public:
    explicit KvCostModel(QObject* parent = nullptr);
    ~KvCostModel() override;

    ChatController* chat() const { return chat_; }
    void setChat(ChatController* chat);
    QString referenceType() const;
    QString testType() const;
    void setTestType(const QString& type);
    QStringList testChoices() const;
    bool canRun() const;
    bool running() const { return job_ != 0; }
    QString status() const { return status_; }
    bool hasResult() const { return result_.has_value(); }
    int row() const { return row_; }
    QString resultReference() const;
    QString resultTest() const;
    int tokens() const { return result_ ? int(result_->cost.perToken.size()) : 0; }
    double meanKl() const { return result_ ? result_->cost.meanKl : 0.0; }
    double p99Kl() const { return result_ ? result_->cost.p99Kl : 0.0; }
    double maxKl() const { return result_ ? result_->cost.maxKl : 0.0; }
    int sameTop1() const { return result_ ? int(result_->cost.sameTop1) : 0; }
    double top1Agreement() const { return result_ ? result_->cost.top1Agreement : 0.0; }
    const std::optional<KvCostResult>& result() const { return result_; }

    // The latest finished answer: runs it both ways (on the worker). false when it cannot (status says why).
    Q_INVOKABLE bool run();
    Q_INVOKABLE void cancel();
    // The latest finished answer's row, or -1.
    int latestAnswerRow() const;

signals:
    void chatChanged();
    void typesChanged();
    void stateChanged();
    void resultChanged();

private:
    void chooseTypes();  // the defaults for the loaded model's cache
    void setStatus(const QString& status);
    void onMeasured(quint64 jobId, const KvCostResult& result);
    void onFailed(quint64 jobId, const QString& message);
    bool allowed(KvType type) const;

    QPointer<ChatController> chat_;
    QList<QMetaObject::Connection> connections_;
    KvType reference_ = KvType::F32, test_ = KvType::Q8_0;
    quint64 job_ = 0;
    int jobRow_ = -1;
    QString status_;
    std::optional<KvCostResult> result_;
    int row_ = -1;
};

}  // namespace inferscope
