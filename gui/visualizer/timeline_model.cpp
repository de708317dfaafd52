#include "visualizer/timeline_model.h"

#include <algorithm>

#include "chat/chat_controller.h"
#include "engine/engine_controller.h"
#include "visualizer/draft_timeline.h"
#include "visualizer/step_inspector.h"

namespace inferscope {
namespace {

double median(QList<qreal> v) {
    if (v.isEmpty()) return 0;
    std::sort(v.begin(), v.end());
    const qsizetype n = v.size();
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

}  // namespace

TimelineModel::TimelineModel(ChatController* chat, StepInspector* inspector, QObject* parent)
    : QObject(parent), chat_(chat), engine_(chat->engine()), inspector_(inspector) {
    connect(inspector_, &StepInspector::selectionChanged, this, &TimelineModel::recompute);
    connect(chat_, &ChatController::answerFinished, this, [this](int row) {
        notePlainAnswer(row);
        recompute();
    });
    connect(engine_, &EngineController::modelChanged, this, [this] {
        forgetExperiments();
        recompute();
    });
    // The experiments ran on the conversation shown: another one starts without them.
    connect(chat_->messages(), &QAbstractItemModel::modelReset, this, &TimelineModel::forgetExperiments);
    connect(engine_, &EngineController::machineMeasured, this, [this](double gbps, double f32, double bf16) {
        machine_ = {{"bandwidthGBps", gbps}, {"peakGflopsF32", f32}, {"peakGflopsBF16", bf16}, {"measured", true}};
        if (measuring_) {
            measuring_ = false;
            setStatus(tr("Machine measured."));
        }
        emit machineChanged();
        recompute();
    });
}

// ---- the model's cost per pass, from its shape (core/model/pass_cost.h) ---------------------------

namespace {

// Every figure 0 while no model is loaded.
PassCost passCost(const EngineController* engine) { return engine->model() ? engine->model()->cost : PassCost(); }

}  // namespace

double TimelineModel::decodeBytes(int position) const { return passCost(engine_).decodeBytes(position); }
double TimelineModel::decodeFlops(int position) const { return passCost(engine_).decodeFlops(position); }
double TimelineModel::prefillFlops(int tokens, int reused) const { return passCost(engine_).prefillFlops(tokens, reused); }

// ---- the shown answer -------------------------------------------------------------------------------

void TimelineModel::setActive(bool on) {
    if (on == active_) return;
    active_ = on;
    emit activeChanged();
    if (active_ && behind_) recompute();
}

void TimelineModel::recompute() {
    if (!active_) {
        behind_ = true;
        return;
    }
    behind_ = false;
    const ChatModel* m = chat_->messages();
    row_ = inspector_->row();
    prefill_.clear();
    decode_.clear();
    decodeMs_.clear();
    decodeGBps_.clear();
    ttftMs_ = 0;
    remote_ = false;
    costKnown_ = false;
    answerModel_.clear();
    speculative_.clear();
    if (row_ >= 0 && row_ < m->count() && m->at(row_).role == Message::Assistant) {
        const ChatMessage& a = m->at(row_);
        const AnswerStats& st = a.stats;
        remote_ = a.origin.remote();
        answerModel_ = a.origin.known() ? ChatController::originLabel(a.origin) : QString();
        // What a pass of the answer's model read and computed: as the answer keeps it, else the
        // loaded model's shape when that model made it (an answer stored before its cost was
        // kept; before origins were: when its stats name it).
        const AnswerOrigin now = engine_->answerOrigin();
        const bool storedCost = !remote_ && a.origin.cost.known();
        costKnown_ = storedCost || (!remote_ && now.backend == AnswerBackend::Local &&
                                    (a.origin.known() ? a.origin.sameModel(now) : st.model.toStdString() == now.modelName));
        const int computed = st.prefilledTokens, reused = st.reusedTokens;
        const double ms = st.prefillMs;
        const PassCost cost = storedCost ? PassCost(a.origin.cost) : costKnown_ ? passCost(engine_) : PassCost();
        const double flops = cost.prefillFlops(computed, reused);
        prefill_ = {{"tokens", computed}, {"reused", reused}, {"ms", ms}, {"tokensPerSecond", st.prefillTokensPerSecond},
                    {"gflops", ms > 0 ? flops / (ms * 1e6) : 0.0}};
        ttftMs_ = st.timeToFirstTokenMs;
        double totalFlops = 0, totalUs = 0;
        for (size_t k = 1; k < a.steps.size(); ++k) {
            const StepRecord& s = a.steps[k];
            if (s.forwardUs <= 0) continue;
            decodeMs_.append(double(s.forwardUs) / 1000.0);
            // the pass ran the previous token, at position s.position - 1
            if (costKnown_) decodeGBps_.append(cost.decodeBytes(s.position - 1) / (double(s.forwardUs) * 1e3));
            totalFlops += cost.decodeFlops(s.position - 1);
            totalUs += double(s.forwardUs);
        }
        const double medMs = median(decodeMs_);
        // The answer's own rate, as its footer and the status bar give it (tokens over the decode's
        // wall time): 1000 / the median step was another figure for the same answer (a server's
        // tokens that arrive together are ~0 ms apart, so it read 17,544 tok/s against 843).
        decode_ = {{"passes", int(decodeMs_.size())}, {"medianMs", medMs}, {"tokensPerSecond", st.decodeTokensPerSecond},
                   {"medianGBps", median(decodeGBps_)}, {"gflops", totalUs > 0 ? totalFlops / (totalUs * 1e3) : 0.0}};
        const double bw = machine_.value("bandwidthGBps").toDouble();
        if (bw > 0 && costKnown_) decode_.insert("bandwidthFraction", median(decodeGBps_) / bw);
        const bool bf16 = engine_->precision().startsWith(QLatin1String("BF16"));
        const double peak = machine_.value(bf16 ? "peakGflopsBF16" : "peakGflopsF32").toDouble();
        if (peak > 0 && costKnown_) prefill_.insert("computeFraction", prefill_.value("gflops").toDouble() / peak);
        prefill_.insert("kvComputed", st.kvComputed);
        prefill_.insert("attentionScores", st.attentionScores);
        // Once the answer is complete: rebuilding its rounds at each streamed batch would cost the
        // GUI thread what the decode needs (the figures come with answerFinished).
        if (!remote_ && !a.streaming) recomputeSpeculative(a, a.origin.known() ? ChatController::originLabel(a.origin) : st.model);
    }
    emit changed();
}

// ---- speculative decoding: rounds, acceptance by position, the speed-up -------------------------

void TimelineModel::recomputeSpeculative(const ChatMessage& a, const QString& model) {
    const DraftTimeline timeline = draftTimeline(a.steps);
    if (!timeline.any()) return;
    speculative_ = draftTimelineMap(timeline);
    const double rate = a.stats.decodeTokensPerSecond;
    speculative_.insert("tokensPerSecond", rate);
    speculative_.insert("model", model);
    const auto baseline = plainBaselines_.constFind(model);
    if (baseline == plainBaselines_.constEnd()) return;
    speculative_.insert("baseline", *baseline);
    const double plain = baseline->value("tokensPerSecond").toDouble();
    if (plain > 0 && rate > 0) speculative_.insert("speedup", rate / plain);
}

void TimelineModel::notePlainAnswer(int row) {
    const ChatModel* m = chat_->messages();
    if (row < 0 || row >= m->count()) return;
    const ChatMessage& a = m->at(row);
    // Plain decoding only: a local answer with decode steps, none drafted, not a branch's copy.
    if (a.role != Message::Assistant || a.origin.remote() || a.steps.size() < 2 || a.stats.branchedAt >= 0 || a.stats.decodeTokensPerSecond <= 0)
        return;
    if (std::any_of(a.steps.begin(), a.steps.end(), [](const StepRecord& s) { return s.draft != nullptr; })) return;
    const QString model = a.origin.known() ? ChatController::originLabel(a.origin) : a.stats.model;
    plainBaselines_[model] = {{"tokensPerSecond", a.stats.decodeTokensPerSecond}, {"tokens", int(a.steps.size())},
                              {"source", tr("a plain answer of %1 tokens on this model, earlier in this session").arg(a.steps.size())}};
}

bool TimelineModel::runWithoutDrafts() {
    const ChatModel* m = chat_->messages();
    if (busy() || !engine_->abilities().runsExperiments) return false;
    if (row_ < 0 || row_ >= m->count() || m->at(row_).steps.size() < 2) {
        setStatus(tr("No answer to run again: send a message first."));
        return false;
    }
    const ChatMessage& a = m->at(row_);
    if (a.origin.known() && !a.origin.sameModel(engine_->answerOrigin())) {
        setStatus(tr("This answer was made by %1: load it to measure plain decoding on it.").arg(ChatController::originLabel(a.origin)));
        return false;
    }
    auto job = rerunOf(a);
    if (!job) return false;  // no drafts: job->speculative stays empty
    if (!startJob(std::move(*job))) return false;
    plainModel_ = a.origin.known() ? ChatController::originLabel(a.origin) : a.stats.model;
    experiment_ = Experiment::Plain;
    setStatus(tr("Decoding the same prompt for %1 tokens without drafts…").arg(a.steps.size()));
    return true;
}

std::optional<GenerationJob> TimelineModel::rerunOf(const ChatMessage& a) const {
    GenerationJob job;
    PromptChunk chunk;
    chunk.tokens = contextTokens(row_);
    chunk.hasTokens = true;
    if (chunk.tokens.empty()) return std::nullopt;
    job.chunks.push_back(std::move(chunk));
    // The answer's own settings; an answer stored without them (an earlier version) runs greedy.
    SamplerParams greedy;
    greedy.temperature = 0.0f;
    job.sampler = a.stats.sampler.value_or(greedy);
    job.sampler.topN = 0;
    job.maxTokens = int32_t(a.steps.size());
    job.resetCache = true;
    job.measurement = true;
    return job;
}

std::vector<int32_t> TimelineModel::contextTokens(int row) const {
    std::vector<int32_t> tokens;
    const ChatModel* m = chat_->messages();
    for (int r = 0; r < row && r < m->count(); ++r) tokens.insert(tokens.end(), m->at(r).tokens.begin(), m->at(r).tokens.end());
    return tokens;
}

void TimelineModel::forgetExperiments() {
    if (busy()) cancelExperiment();  // its result would land on the other conversation
    noCacheMs_.clear();
    counters_.clear();
    sweep_.clear();
    if (!measuring_) status_.clear();
    emit experimentsChanged();
    emit busyChanged();
}

void TimelineModel::setStatus(const QString& status) {
    status_ = status;
    emit busyChanged();
}

// ---- experiments ------------------------------------------------------------------------------------

bool TimelineModel::runWithoutCache() {
    const ChatModel* m = chat_->messages();
    if (busy()) return false;
    if (row_ < 0 || row_ >= m->count() || m->at(row_).steps.empty()) {
        setStatus(tr("No answer to run again: send a message first."));
        return false;
    }
    const ChatMessage& a = m->at(row_);
    auto job = rerunOf(a);
    if (!job) return false;
    job->useKvCache = false;
    if (!startJob(std::move(*job))) return false;
    experiment_ = Experiment::NoCache;
    noCacheMs_.clear();
    setStatus(tr("Running the same %1 tokens without the KV cache…").arg(a.steps.size()));
    emit experimentsChanged();
    return true;
}

bool TimelineModel::runPrefillSweep() {
    if (busy() || !engine_->abilities().runsExperiments) return false;  // a server's prefill is not ours to time
    const int limit = std::min(engine_->contextLength(), 2048);
    sweepLengths_.clear();
    for (int n = 8; n <= limit; n *= 2) sweepLengths_.push_back(n);
    if (sweepLengths_.empty()) return false;
    // The conversation's tokens, repeated to the longest length (any real text will do: the cost
    // of a prefill depends on the length only).
    sweepTokens_ = contextTokens(chat_->messages()->count());
    if (sweepTokens_.size() < 2) sweepTokens_ = {engine_->model()->tokenizer->bosId() >= 0 ? engine_->model()->tokenizer->bosId() : 0};
    sweepIndex_ = 0;
    sweep_.clear();
    experiment_ = Experiment::Sweep;
    emit experimentsChanged();
    return startSweepJob();
}

bool TimelineModel::startSweepJob() {
    const int n = sweepLengths_[sweepIndex_];
    GenerationJob job;
    PromptChunk chunk;
    chunk.hasTokens = true;
    for (int i = 0; i < n; ++i) chunk.tokens.push_back(sweepTokens_[size_t(i) % sweepTokens_.size()]);
    job.chunks.push_back(std::move(chunk));
    job.sampler.temperature = 0.0f;
    job.sampler.topN = 0;
    job.maxTokens = 1;
    job.resetCache = true;
    job.measurement = true;
    if (!startJob(std::move(job))) {
        experiment_ = Experiment::None;
        setStatus(tr("The engine is busy."));
        return false;
    }
    setStatus(tr("Prefill sweep: %1 tokens (%2 of %3)…").arg(n).arg(sweepIndex_ + 1).arg(sweepLengths_.size()));
    return true;
}

bool TimelineModel::startJob(GenerationJob job) {
    job_ = engine_->startGeneration(std::move(job));
    if (!job_) return false;
    connect(job_, &GenerationHandle::stepsArrived, this, &TimelineModel::onSteps);
    connect(job_, &GenerationHandle::finished, this, &TimelineModel::onFinished);
    connect(job_, &GenerationHandle::failed, this, &TimelineModel::onFailed);
    return true;
}

void TimelineModel::cancelExperiment() {
    if (busy() && job_) job_->cancel();
}

void TimelineModel::onSteps(const StepBatch& batch) {
    if (experiment_ != Experiment::NoCache) return;
    for (const StepRecord& s : batch.steps)
        if (s.step > 0) noCacheMs_.append(double(s.forwardUs) / 1000.0);
    emit experimentsChanged();
}

void TimelineModel::onFinished(const GenerationSummary& summary) {
    if (!busy()) return;
    if (summary.reason == FinishReason::Cancelled) {
        experiment_ = Experiment::None;
        setStatus(tr("Stopped."));
        return;
    }
    if (experiment_ == Experiment::Plain) {
        experiment_ = Experiment::None;
        const double rate = summary.decodeTokensPerSecond();
        plainBaselines_[plainModel_] = {{"tokensPerSecond", rate}, {"tokens", summary.nGenerated},
                                        {"source", tr("the same prompt decoded for %1 tokens without drafts, just now").arg(summary.nGenerated)}};
        setStatus(tr("Plain decoding: %1 tok/s.").arg(rate, 0, 'f', 1));
        recompute();
        return;
    }
    if (experiment_ == Experiment::NoCache) {
        const AnswerStats& st = chat_->messages()->at(std::min(row_, chat_->messages()->count() - 1)).stats;
        const ModelDetails& d = engine_->modelDetails();
        const double perVector = double(d.layers) * d.kvHeads;
        counters_ = {{"cachedKv", st.kvComputed},
                     {"cachedScores", st.attentionScores},
                     {"uncachedKv", double(summary.kv.kvComputed)},
                     {"uncachedScores", double(summary.kv.attentionScores)},
                     {"kvVectorsPerPosition", perVector},
                     {"cachedDecodeMs", double(0)},
                     {"uncachedDecodeMs", double(summary.decodeUs) / 1000.0},
                     {"uncachedPrefillMs", double(summary.prefill.us) / 1000.0},
                     {"tokens", summary.nGenerated}};
        double cachedUs = 0;
        for (qreal ms : decodeMs_) cachedUs += ms;
        counters_["cachedDecodeMs"] = cachedUs;
        experiment_ = Experiment::None;
        setStatus(tr("Without the cache: %1 ms of decoding against %2 ms with it.")
                      .arg(summary.decodeUs / 1000.0, 0, 'f', 1).arg(cachedUs, 0, 'f', 1));
        emit experimentsChanged();
        return;
    }
    // sweep
    const int n = sweepLengths_[sweepIndex_];
    const double ms = double(summary.prefill.us) / 1000.0;
    sweep_.append(QVariantMap{{"tokens", n}, {"ms", ms}, {"msPerToken", ms / n}, {"gflops", ms > 0 ? prefillFlops(n, 0) / (ms * 1e6) : 0.0}});
    emit experimentsChanged();
    if (++sweepIndex_ < sweepLengths_.size()) {
        startSweepJob();
        return;
    }
    experiment_ = Experiment::None;
    setStatus(tr("Prefill sweep done: %1 lengths.").arg(sweep_.size()));
}

void TimelineModel::onFailed(const QString& message) {
    if (!busy()) return;
    experiment_ = Experiment::None;
    setStatus(message);
}

void TimelineModel::measureMachine() {
    if (!engine_->hasModel()) {
        setStatus(tr("Load a model first: the machine is measured on the engine's thread with its settings."));
        return;
    }
    // About a second of full load with nothing on screen: the status says it is under way.
    measuring_ = true;
    setStatus(tr("Measuring this machine: read bandwidth, then matrix multiply peak…"));
    engine_->measureMachine();
}

}  // namespace inferscope
