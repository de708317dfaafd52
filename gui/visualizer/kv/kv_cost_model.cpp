#include "visualizer/kv/kv_cost_model.h"

#include "app/units.h"

namespace inferscope {
namespace {

QString label(KvType type) { return dtypeLabel(QString::fromLatin1(kvTypeName(type))); }

}  // namespace

KvCostModel::KvCostModel(QObject* parent) : QObject(parent) {}

KvCostModel::~KvCostModel() { cancel(); }

void KvCostModel::setChat(ChatController* chat) {
    if (chat_ == chat) return;
    cancel();
    for (const auto& c : connections_) disconnect(c);
    connections_.clear();
    chat_ = chat;
    if (chat_) {
        EngineController* engine = chat_->engine();
        connections_ << connect(engine, &EngineController::kvCostMeasured, this, &KvCostModel::onMeasured);
        connections_ << connect(engine, &EngineController::kvCostFailed, this, &KvCostModel::onFailed);
        connections_ << connect(engine, &EngineController::kvTypeApplied, this, &KvCostModel::chooseTypes);
        connections_ << connect(engine, &EngineController::stateChanged, this, &KvCostModel::stateChanged);
        connections_ << connect(engine, &EngineController::modelChanged, this, [this] {
            // Another model's tokens and distributions: the figures described the previous one.
            if (result_) {
                result_.reset();
                row_ = -1;
                emit resultChanged();
            }
            chooseTypes();
        });
        // A new answer may start: the measurement gives way to it.
        connections_ << connect(chat_, &ChatController::generatingChanged, this, [this] {
            if (chat_ && chat_->generating()) cancel();
            emit stateChanged();
        });
        connections_ << connect(chat_, &ChatController::answerFinished, this, &KvCostModel::stateChanged);
        connections_ << connect(chat_->messages(), &QAbstractItemModel::modelReset, this, [this] {
            if (!result_) return;
            result_.reset();
            row_ = -1;
            emit resultChanged();
        });
    }
    chooseTypes();
    emit chatChanged();
    emit stateChanged();
}

bool KvCostModel::allowed(KvType type) const {
    return chat_ && chat_->engine()->kvTypeProblem(QString::fromLatin1(kvTypeName(type))).isEmpty();
}

void KvCostModel::chooseTypes() {
    const KvType inUse = chat_ ? parseKvType(chat_->engine()->kvType().toStdString()).value_or(KvType::F32) : KvType::F32;
    if (isBlockKvType(inUse)) {
        reference_ = KvType::F16;
        test_ = inUse;
    } else {
        reference_ = inUse;
        test_ = allowed(KvType::Q8_0) ? KvType::Q8_0 : inUse == KvType::F32 ? KvType::F16 : KvType::F32;
    }
    emit typesChanged();
}

QString KvCostModel::referenceType() const { return QString::fromLatin1(kvTypeName(reference_)); }
QString KvCostModel::testType() const { return QString::fromLatin1(kvTypeName(test_)); }

void KvCostModel::setTestType(const QString& type) {
    auto parsed = parseKvType(type.toStdString());
    if (!parsed || *parsed == test_ || *parsed == reference_ || !allowed(*parsed)) return;
    test_ = *parsed;
    emit typesChanged();
}

QStringList KvCostModel::testChoices() const {
    QStringList out;
    for (KvType t : allKvTypes())
        if (t != reference_ && allowed(t)) out << QString::fromLatin1(kvTypeName(t));
    return out;
}

int KvCostModel::latestAnswerRow() const {
    if (!chat_) return -1;
    const ChatModel& messages = *chat_->messages();
    for (int r = messages.count() - 1; r >= 0; --r)
        if (messages.at(r).role == Message::Assistant) return chat_->answerContext(r) ? r : -1;
    return -1;
}

bool KvCostModel::canRun() const {
    return chat_ && !running() && chat_->engine()->state() == EngineController::State::Ready && latestAnswerRow() >= 0;
}

QString KvCostModel::resultReference() const { return result_ ? label(result_->cost.reference) : QString(); }
QString KvCostModel::resultTest() const { return result_ ? label(result_->cost.test) : QString(); }

void KvCostModel::setStatus(const QString& status) {
    status_ = status;
    emit stateChanged();
}

bool KvCostModel::run() {
    if (!chat_ || running()) return false;
    const int row = latestAnswerRow();
    auto context = row >= 0 ? chat_->answerContext(row) : std::nullopt;
    if (!context) {
        setStatus(tr("There is no finished answer to measure: send a message first."));
        return false;
    }
    KvCostJob job;
    job.chunks = std::move(context->chunks);
    job.answer = std::move(context->answer);
    job.reference = reference_;
    job.test = test_;
    const int n = int(job.answer.size());
    job_ = chat_->engine()->measureKvCost(std::move(job));
    if (job_ == 0) {
        setStatus(tr("The model is busy: try again when the answer has finished."));
        return false;
    }
    jobRow_ = row;
    setStatus(tr("Running the answer's %1 tokens through a %2 and a %3 cache…").arg(n).arg(label(reference_), label(test_)));
    return true;
}

void KvCostModel::cancel() {
    if (!running() || !chat_) return;
    chat_->engine()->cancelKvCost(job_);
}

void KvCostModel::onMeasured(quint64 jobId, const KvCostResult& result) {
    if (jobId != job_) return;
    job_ = 0;
    ChatModel& messages = *chat_->messages();
    if (row_ >= 0 && row_ != jobRow_ && row_ < messages.count()) messages.setKvKl(row_, {});
    result_ = result;
    row_ = jobRow_;
    std::vector<float> kl;
    kl.reserve(result.cost.perToken.size());
    for (const DistributionShift& s : result.cost.perToken) kl.push_back(float(s.kl));
    messages.setKvKl(row_, std::move(kl));
    messages.setHeatMode(QStringLiteral("kvcost"));  // the answer shows where the two caches part
    emit resultChanged();
    setStatus(QString());
}

void KvCostModel::onFailed(quint64 jobId, const QString& message) {
    if (jobId != job_) return;
    job_ = 0;
    setStatus(message == QLatin1String("cancelled") ? tr("Cancelled.") : message);
}

}  // namespace inferscope
