#include "visualizer/side_by_side.h"

#include <QFileInfo>
#include <QThread>
#include <QUrl>
#include <algorithm>

#include "chat/token_heatmap.h"
#include "visualizer/compare_values.h"

namespace inferscope {
namespace {

QString finishText(FinishReason reason) {
    switch (reason) {
    case FinishReason::EndOfGeneration: return SideBySide::tr("ended its answer");
    case FinishReason::StopString: return SideBySide::tr("stop string");
    case FinishReason::MaxTokens: return SideBySide::tr("length limit");
    case FinishReason::ContextFull: return SideBySide::tr("context full");
    case FinishReason::Cancelled: return SideBySide::tr("stopped");
    }
    return {};
}

// The heat text's spans as rich text for a read-only TextEdit: each span's characters escaped,
// its tint as its background, line breaks as breaks.
QString spansToHtml(const QList<HeatSpan>& spans) {
    QString html;
    for (const HeatSpan& span : spans) {
        if (span.text.size() == 1 && isLineBreak(span.text[0])) {
            html += QStringLiteral("<br>");
            continue;
        }
        const QString text = span.text.toHtmlEscaped().replace(QLatin1Char(' '), QStringLiteral("&#32;"));
        if (span.tint.isValid())
            html += QStringLiteral("<span style=\"background-color:%1\">%2</span>").arg(span.tint.name(QColor::HexArgb), text);
        else
            html += text;
    }
    return QStringLiteral("<span style=\"white-space:pre-wrap\">") + html + QStringLiteral("</span>");
}

}  // namespace

SideBySide::SideBySide(QObject* parent) : QObject(parent) {}

SideBySide::~SideBySide() { cancel(); }

void SideBySide::setChat(ChatController* chat) {
    if (chat_ == chat) return;
    cancel();
    for (const auto& c : connections_) disconnect(c);
    connections_.clear();
    chat_ = chat;
    if (chat_) {
        EngineController* engine = chat_->engine();
        connections_ << connect(engine, &EngineController::stateChanged, this, &SideBySide::stateChanged);
        connections_ << connect(engine, &EngineController::compareFinished, this, &SideBySide::onCompareFinished);
        connections_ << connect(engine, &EngineController::compareFailed, this, &SideBySide::onCompareFailed);
        connections_ << connect(engine, &EngineController::pairModelReady, this, [this](quint64 jobId, const LoadedModel& model, double loadMs) {
            if (!columns_[1].handle || columns_[1].handle->id() != jobId) return;
            columns_[1].model = model;
            columns_[1].loadMs = loadMs;
            touch(1);
        });
        connections_ << connect(chat_->messages(), &ChatModel::heatModeChanged, this, [this] { touch(-1); });  // the theme
    }
    emit chatChanged();
    emit stateChanged();
}

bool SideBySide::running() const { return generating_ || comparing_ >= 0; }

bool SideBySide::canRun() const {
    if (!chat_ || running()) return false;
    EngineController* engine = chat_->engine();
    return engine->state() == EngineController::State::Ready && engine->abilities().comparesModels;
}

void SideBySide::setStatus(const QString& status) {
    status_ = status;
    emit stateChanged();
}

bool SideBySide::run(const QString& prompt, const QString& pathOrUrl) {
    if (!canRun()) {
        setStatus(running() ? tr("Side by side is running.")
                            : tr("Side by side needs a model loaded on this computer, not answering."));
        return false;
    }
    const QUrl url(pathOrUrl);
    const QString path = url.isLocalFile() ? url.toLocalFile() : pathOrUrl;
    if (path.trimmed().isEmpty()) {
        setStatus(tr("Choose the second model's GGUF file."));
        return false;
    }
    if (prompt.trimmed().isEmpty()) {
        setStatus(tr("Write a prompt for both models."));
        return false;
    }
    if (const QString tooLong = chat_->tooLongError(prompt); !tooLong.isEmpty()) {
        setStatus(tooLong);
        return false;
    }
    EngineController* engine = chat_->engine();
    GenerationJob a = chat_->singleTurnJob(prompt);
    // The cores split between the two: each model decodes on half of them, at the same time.
    const int total = a.threads && *a.threads > 0 ? *a.threads : QThread::idealThreadCount();
    const int half = std::max(1, total / 2);
    a.threads = half;
    GenerationJob b = a;
    b.otherModel = path.toStdString();
    const auto pair = engine->startPair(a, b);
    if (!pair.a || !pair.b) {
        setStatus(tr("Side by side could not start: the model is busy."));
        return false;
    }
    for (Column& c : columns_) c = Column();
    columns_[0].model = *engine->model();
    columns_[0].threads = columns_[1].threads = half;
    job_ = a;
    modelB_ = path;
    trimLeadingSpace_ = chat_->mode() == ChatController::Mode::Chat;
    QString context;
    if (!chat_->systemPrompt().trimmed().isEmpty()) context += chat_->systemPrompt() + QStringLiteral("\n\n");
    contextText_ = (context + prompt + QStringLiteral("\n\n")).toStdString();
    clock_.start();
    generating_ = true;
    connectColumn(0, pair.a);
    connectColumn(1, pair.b);
    setStatus(tr("Both models are answering, each on %n thread(s).", nullptr, half));
    touch(-1);
    return true;
}

void SideBySide::connectColumn(int side, GenerationHandle* handle) {
    Column& c = columns_[side];
    c.handle = handle;
    connect(handle, &GenerationHandle::prefillFinished, this, [this, side](const PrefillStats& stats) {
        columns_[side].prefill = stats;
        touch(side);
    });
    connect(handle, &GenerationHandle::stepsArrived, this, [this, side](const StepBatch& batch) {
        Column& col = columns_[side];
        if (col.firstTokenMs < 0 && !batch.steps.empty()) col.firstTokenMs = double(clock_.nsecsElapsed()) / 1e6;
        col.steps.insert(col.steps.end(), batch.steps.begin(), batch.steps.end());
        touch(side);
    });
    connect(handle, &GenerationHandle::finished, this, [this, side](const GenerationSummary& summary) {
        columns_[side].summary = summary;
        onEnded();
    });
    connect(handle, &GenerationHandle::failed, this, [this, side](const QString& message) {
        columns_[side].error = message.isEmpty() ? tr("failed") : message;
        onEnded();
    });
}

void SideBySide::onEnded() {
    touch(-1);
    if (!columns_[0].ended() || !columns_[1].ended()) return;
    generating_ = false;
    const bool stopped = std::any_of(std::begin(columns_), std::end(columns_), [](const Column& c) {
        return !c.error.isEmpty() || (c.summary && c.summary->reason == FinishReason::Cancelled);
    });
    if (stopped) {
        setStatus(!columns_[1].error.isEmpty() ? columns_[1].error : !columns_[0].error.isEmpty() ? columns_[0].error : tr("Stopped."));
        emit finished();
        return;
    }
    compareNext();
}

std::string SideBySide::answerText(const Column& c) const {
    std::string text;
    for (const StepRecord& s : c.steps) text += s.piece;
    return text;
}

// Each answer in turn, read by both models (the worker runs one job at a time).
void SideBySide::compareNext() {
    const int side = comparing_ + 1;
    if (side > 1 || !chat_) {
        comparing_ = -1;
        setStatus(QString());
        emit finished();
        return;
    }
    comparing_ = side;
    Column& c = columns_[side];
    if (c.steps.empty()) {
        c.compareError = tr("no tokens to compare");
        touch(side);
        return compareNext();
    }
    CompareJob job;
    job.chunks = job_.chunks;
    job.modelB = modelB_.toStdString();
    job.sampler = job_.sampler;
    job.contextText = contextText_;
    const bool sameVocabulary = columns_[0].model.vocabularyHash == columns_[1].model.vocabularyHash;
    if (side == 1 && !sameVocabulary) job.answerText = answerText(c);  // B's ids mean nothing to A
    else
        for (const StepRecord& s : c.steps) job.answer.push_back(s.sample.id);
    c.compareJob = chat_->engine()->compareModels(std::move(job));
    if (c.compareJob == 0) {
        c.compareError = tr("the model is busy");
        touch(side);
        return compareNext();
    }
    const QString reader = column(1 - side).value("name").toString();
    setStatus(tr("Reading %1's answer with %2…").arg(column(side).value("name").toString(), reader));
}

void SideBySide::onCompareFinished(quint64 jobId, const CompareResult& result) {
    if (comparing_ < 0 || jobId != columns_[comparing_].compareJob) return;
    Column& c = columns_[comparing_];
    c.compared = result;
    if (result.text) {
        std::vector<std::string> pieces;
        for (const StepRecord& s : c.steps) pieces.push_back(s.piece);
        c.tint = tokenGaps(*result.text, pieces, result.answerText);
    } else {
        c.tint.assign(c.steps.size(), -1.0f);
        c.flips.assign(c.steps.size(), 0);
        for (const TokenComparison& t : result.perToken) {
            if (t.index < 0 || size_t(t.index) >= c.tint.size()) continue;
            c.tint[size_t(t.index)] = float(t.shift.kl);
            c.flips[size_t(t.index)] = t.flip() ? 1 : 0;
        }
    }
    touch(comparing_);
    compareNext();
}

void SideBySide::onCompareFailed(quint64 jobId, const QString& message) {
    if (comparing_ < 0 || jobId != columns_[comparing_].compareJob) return;
    if (message == QLatin1String("cancelled")) {
        comparing_ = -1;
        setStatus(tr("Stopped."));
        emit finished();
        return;
    }
    columns_[comparing_].compareError = message;
    touch(comparing_);
    compareNext();
}

void SideBySide::cancel() {
    if (!chat_) return;
    EngineController* engine = chat_->engine();
    if (generating_) engine->stop();
    if (comparing_ >= 0) engine->cancelCompare(columns_[comparing_].compareJob);
}

QVariantMap SideBySide::describeCompared(const Column& c, int side) const {
    if (!c.compared) return {{"valid", false}, {"error", c.compareError}};
    CompareSummary s;
    if (c.compared->text) summarizeText(*c.compared, s);
    else summarizeTokens(*c.compared, s);
    // A's answer: its own model is A, the other B; B's answer the other way round.
    const bool own = side == 0;
    QVariantMap m{{"valid", true},
                  {"onText", s.onText},
                  {"tokens", s.tokens},
                  {"meanKl", s.meanKl},
                  {"meanKlError", s.meanKlError},
                  {"medianKl", s.medianKl},
                  {"p99Kl", s.p99Kl},
                  {"maxKl", s.maxKl},
                  {"top1Agreement", s.top1Agreement},
                  {"top1AgreementError", s.top1AgreementError},
                  {"perplexityOwn", own ? s.perplexityA : s.perplexityB},
                  {"perplexityOwnError", own ? s.perplexityAError : s.perplexityBError},
                  {"perplexityOther", own ? s.perplexityB : s.perplexityA},
                  {"perplexityOtherError", own ? s.perplexityBError : s.perplexityAError},
                  {"bitsPerByteOwn", own ? s.bitsPerByteA : s.bitsPerByteB},
                  {"bitsPerByteOther", own ? s.bitsPerByteB : s.bitsPerByteA},
                  {"why", s.why},
                  {"compareMs", c.compared->compareMs}};
    return m;
}

QVariantMap SideBySide::column(int side) const {
    if (!fresh_[side]) {
        described_[side] = describe(side);
        fresh_[side] = true;
    }
    return described_[side];
}

void SideBySide::touch(int side) {
    for (int s = 0; s < 2; ++s)
        if (side < 0 || side == s) fresh_[s] = false;
    emit columnsChanged();
}

QVariantMap SideBySide::describe(int side) const {
    const Column& c = columns_[side];
    QVariantMap m;
    const QString file = QString::fromStdString(c.model.path);
    m["file"] = QFileInfo(file).fileName();
    m["path"] = file;
    m["name"] = c.model.path.empty() ? (side == 0 ? tr("the loaded model") : QFileInfo(modelB_).fileName())
                                     : tr("%1 (%2)").arg(QString::fromStdString(c.model.info.name), QFileInfo(file).fileName());
    m["device"] = QString::fromStdString(c.model.device);
    m["threads"] = c.threads;
    m["weightBytes"] = double(c.model.weightBytesResident);
    m["kvBytes"] = double(c.summary ? c.summary->kv.bytesReserved : c.model.kv.bytesReserved);
    const bool dark = chat_ && chat_->messages()->darkTheme();
    const bool onText = c.compared && c.compared->text;
    const HeatText heat = buildHeatText(c.steps, c.tint.empty() ? HeatMode::Off : HeatMode::Compare, trimLeadingSpace_, dark, {}, 0, c.tint,
                                        c.flips, onText ? kCompareTextTintBits : kCompareTintNats);
    m["html"] = spansToHtml(heat.spans);
    m["text"] = heat.plain;
    m["tokens"] = int(c.steps.size());
    m["streaming"] = bool(c.handle) && !c.ended();
    m["finish"] = c.summary ? finishText(c.summary->reason) : QString();
    m["error"] = c.error;
    m["firstTokenMs"] = c.firstTokenMs;
    m["loadMs"] = c.loadMs;
    m["prefillMs"] = c.prefill ? double(c.prefill->us) / 1000.0 : -1.0;
    m["prefillTokens"] = c.prefill ? c.prefill->nComputed : 0;
    double decodeTps = c.summary ? c.summary->decodeTokensPerSecond() : 0.0;
    if (!c.summary) {  // live, from the engine's own times of the decode passes so far
        int64_t us = 0;
        int n = 0;
        for (const StepRecord& s : c.steps)
            if (s.step > 0) {
                us += s.forwardUs;
                ++n;
            }
        decodeTps = us > 0 ? n * 1e6 / double(us) : 0.0;
    }
    m["decodeTps"] = decodeTps;
    m["compared"] = describeCompared(c, side);
    return m;
}

}  // namespace inferscope
