#include "visualizer/compare_model.h"

#include <QFileInfo>
#include <algorithm>
#include <QUrl>

namespace inferscope {
namespace {

// The conversation before `row` as plain text: the system prompt and each message, a blank line
// after each (no template: a model of another vocabulary has its own).
std::string plainContext(ChatController& chat, int row) {
    QString text;
    if (!chat.systemPrompt().trimmed().isEmpty()) text += chat.systemPrompt() + QStringLiteral("\n\n");
    const ChatModel& messages = *chat.messages();
    for (int r = 0; r < row && r < messages.count(); ++r) text += messages.at(r).text + QStringLiteral("\n\n");
    return text.toStdString();
}

}  // namespace

CompareModel::CompareModel(QObject* parent) : QObject(parent) {}

CompareModel::~CompareModel() { cancel(); }

void CompareModel::setChat(ChatController* chat) {
    if (chat_ == chat) return;
    cancel();
    for (const auto& c : connections_) disconnect(c);
    connections_.clear();
    chat_ = chat;
    if (chat_) {
        EngineController* engine = chat_->engine();
        connections_ << connect(engine, &EngineController::compareFinished, this, &CompareModel::onFinished);
        connections_ << connect(engine, &EngineController::compareFailed, this, &CompareModel::onFailed);
        connections_ << connect(engine, &EngineController::stateChanged, this, &CompareModel::stateChanged);
        connections_ << connect(engine, &EngineController::modelChanged, this, &CompareModel::stateChanged);
        // A new answer may start: the comparison gives way to it.
        connections_ << connect(chat_, &ChatController::generatingChanged, this, [this] {
            if (chat_ && chat_->generating()) cancel();
            emit stateChanged();
        });
        connections_ << connect(chat_, &ChatController::answerFinished, this, &CompareModel::stateChanged);
        // The answer a result (or the running job) describes may be gone.
        ChatModel* messages = chat_->messages();
        connections_ << connect(messages, &QAbstractItemModel::modelReset, this, &CompareModel::checkStillThere);
        connections_ << connect(messages, &QAbstractItemModel::rowsRemoved, this, &CompareModel::checkStillThere);
        connections_ << connect(messages, &QAbstractItemModel::dataChanged, this, &CompareModel::checkStillThere);
    }
    emit chatChanged();
    emit stateChanged();
}

void CompareModel::setRow(int row) {
    if (row_ == row) return;
    row_ = row;
    emit rowChanged();
    emit stateChanged();
}

int CompareModel::targetRow() const {
    if (!chat_) return -1;
    const ChatModel& messages = *chat_->messages();
    if (row_ >= 0) return row_ < messages.count() && messages.at(row_).role == Message::Assistant ? row_ : -1;
    for (int r = messages.count() - 1; r >= 0; --r)
        if (messages.at(r).role == Message::Assistant && !messages.at(r).streaming) return r;
    return -1;
}

std::optional<CompareModel::AnswerKey> CompareModel::keyOf(int row) const {
    if (!chat_ || row < 0 || row >= chat_->messages()->count()) return std::nullopt;
    const ChatMessage& m = chat_->messages()->at(row);
    if (m.role != Message::Assistant || m.streaming || m.steps.empty()) return std::nullopt;
    AnswerKey key{row, m.activeVariant, {}};
    key.tokens.reserve(m.steps.size());
    for (const StepRecord& s : m.steps) key.tokens.push_back(s.sample.id);
    return key;
}

bool CompareModel::canRun() const {
    return chat_ && !running() && chat_->engine()->state() == EngineController::State::Ready &&
           chat_->engine()->abilities().comparesModels && keyOf(targetRow()).has_value();
}

void CompareModel::setStatus(const QString& status) {
    status_ = status;
    emit stateChanged();
}

bool CompareModel::run(const QString& pathOrUrl) {
    if (!chat_ || running()) return false;
    const QUrl url(pathOrUrl);
    const QString path = url.isLocalFile() ? url.toLocalFile() : pathOrUrl;
    if (path.isEmpty()) return false;
    modelB_ = path;
    EngineController* engine = chat_->engine();
    if (engine->hasModel() && !engine->abilities().comparesModels) {
        setStatus(tr("%1 runs on a server: a second model reads an answer beside a model loaded from a file on this computer.").arg(engine->modelName()));
        return false;
    }
    const int row = targetRow();
    const auto key = keyOf(row);
    auto context = key ? chat_->answerContext(row) : std::nullopt;
    if (!key || !context) {
        setStatus(tr("There is no finished answer to compare: send a message first."));
        return false;
    }
    // The answer's tokens are its own model's: another model loaded now would read other tokens.
    const ChatMessage& answer = chat_->messages()->at(row);
    if (answer.origin.known() && !answer.origin.sameModel(engine->answerOrigin())) {
        setStatus(tr("This answer was made by %1: load it to compare the answer with another model.").arg(ChatController::originLabel(answer.origin)));
        return false;
    }
    CompareJob job;
    job.chunks = std::move(context->chunks);
    job.answer = std::move(context->answer);
    job.modelB = path.toStdString();
    job.sampler = answer.stats.sampler;
    job.contextText = plainContext(*chat_, row);
    const int n = int(job.answer.size());
    job_ = engine->compareModels(std::move(job));
    if (job_ == 0) {
        setStatus(tr("The model is busy: try again when the answer has finished."));
        return false;
    }
    jobKey_ = *key;
    setStatus(tr("Reading the answer's %1 tokens with %2 and %3…").arg(n).arg(engine->modelName(), QFileInfo(path).fileName()));
    return true;
}

void CompareModel::cancel() {
    if (!running() || !chat_) return;
    chat_->engine()->cancelCompare(job_);
}

void CompareModel::clearResult() {
    if (!result_) return;
    // Its tint goes with it; a row that shows another answer now has none of this one (ChatModel
    // drops it with the version it belonged to).
    if (chat_ && keyOf(resultKey_.row) == resultKey_) chat_->messages()->setCompared(resultKey_.row, {}, {});
    result_.reset();
    summary_ = {};
    emit resultChanged();
}

void CompareModel::checkStillThere() {
    if (running() && keyOf(jobKey_.row) != jobKey_) cancel();  // its result would describe nothing shown
    if (result_ && keyOf(resultKey_.row) != resultKey_) clearResult();
    emit stateChanged();
}

void CompareModel::onFinished(quint64 jobId, const CompareResult& result) {
    if (jobId != job_) return;
    job_ = 0;
    if (!chat_ || keyOf(jobKey_.row) != jobKey_) {
        setStatus(tr("The answer changed while it was being compared: nothing to show."));
        return;
    }
    clearResult();
    ChatModel& messages = *chat_->messages();
    const ChatMessage& answer = messages.at(jobKey_.row);
    result_ = result;
    resultKey_ = jobKey_;

    CompareSummary s;
    s.valid = true;
    s.row = jobKey_.row;
    s.version = jobKey_.version + 1;
    s.modelA = answer.origin.modelName.empty() ? chat_->engine()->modelName() : QString::fromStdString(answer.origin.modelName);
    s.modelBPath = QString::fromStdString(result.modelB);
    s.modelB = QFileInfo(s.modelBPath).fileName();
    if (result.text) {  // vocabularies that differ: no token figures; each token tinted by its words' gap
        s.loadMs = result.loadMs;
        s.compareMs = result.compareMs;
        summarizeText(result, s);
        summary_ = s;
        std::vector<std::string> pieces;
        pieces.reserve(answer.steps.size());
        for (const StepRecord& step : answer.steps) pieces.push_back(step.piece);
        std::vector<float> gaps = tokenGaps(*result.text, pieces, result.answerText);
        if (!gaps.empty()) {
            messages.setCompared(jobKey_.row, std::move(gaps), {}, true);
            messages.setHeatMode(QStringLiteral("compare"));
        }
        emit resultChanged();
        setStatus(QString());
        return;
    }
    summarizeTokens(result, s);
    s.loadMs = result.loadMs;
    s.compareMs = result.compareMs;

    std::vector<float> kl(answer.steps.size(), -1.0f);
    std::vector<uint8_t> flips(answer.steps.size(), 0);
    for (const TokenComparison& t : result.perToken) {
        if (t.index < 0 || size_t(t.index) >= kl.size()) continue;
        kl[size_t(t.index)] = float(t.shift.kl);
        flips[size_t(t.index)] = t.flip() ? 1 : 0;
        if (t.flip() && s.firstFlip < 0) {
            s.firstFlip = t.index;
            s.firstFlipTokenB = t.shift.topTest;
        }
    }
    summary_ = s;
    messages.setCompared(jobKey_.row, std::move(kl), std::move(flips));
    messages.setHeatMode(QStringLiteral("compare"));  // the answer shows where the two models part
    emit resultChanged();
    setStatus(QString());
}

void CompareModel::onFailed(quint64 jobId, const QString& message) {
    if (jobId != job_) return;
    job_ = 0;
    setStatus(message == QLatin1String("cancelled") ? tr("Cancelled.") : message);
}

QVariantMap CompareModel::tokenAt(int row, int step) const {
    if (!result_ || row != resultKey_.row || step < 0) return {};
    const auto& perToken = result_->perToken;
    auto it = size_t(step) < perToken.size() && perToken[size_t(step)].index == step
                  ? perToken.begin() + step
                  : std::find_if(perToken.begin(), perToken.end(), [step](const TokenComparison& t) { return t.index == step; });
    if (it == perToken.end()) return {};
    const TokenComparison& t = *it;
    QVariantList candidates;
    for (const ComparedCandidate& c : t.candidates)
        candidates.append(QVariantMap{{"id", c.id}, {"pA", double(c.pA)}, {"pB", double(c.pB)}, {"finalA", double(c.finalA)},
                                      {"finalB", double(c.finalB)}, {"chosen", c.id == t.id}});
    QVariantMap out{{"step", step}, {"id", t.id}, {"kl", t.shift.kl}, {"flip", t.flip()}, {"pA", t.shift.pReference},
                    {"pB", t.shift.pTest}, {"dp", t.shift.dp()}, {"topA", t.shift.topReference}, {"topB", t.shift.topTest},
                    {"candidates", candidates}};
    if (t.recordB) {
        const SampleRecord& b = *t.recordB;
        QVariantList top, survivors;
        for (const CandidateRecord& c : b.top) top.append(candidateValues(c, t.id));
        for (int32_t n : b.survivors) survivors.append(n);
        out.insert(QStringLiteral("b"), QVariantMap{{"candidates", top}, {"survivors", survivors}, {"rank", b.rank}, {"pFinal", double(b.pFinal)}});
    }
    return out;
}

bool CompareModel::branchAtFirstFlip() {
    if (!chat_ || !result_ || summary_.firstFlip < 0) return false;
    return chat_->branchFrom(resultKey_.row, summary_.firstFlip, summary_.firstFlipTokenB);
}

bool CompareModel::continueWithB() {
    if (!chat_ || !result_ || summary_.firstFlip < 0) return false;
    return chat_->branchWithModel(resultKey_.row, summary_.firstFlip, summary_.firstFlipTokenB, result_->originB);
}

}  // namespace inferscope
