#include "engine/engine_worker.h"

#include <QElapsedTimer>
#include <algorithm>
#include <bitset>

#include "backend/memory_probe.h"
#include "engine/compare.h"  // checkSameVocabulary

namespace inferscope {
namespace {

// Turns the engine's per-step callbacks into batches, at most about one per kStepBatchMs (the
// first step at once, so the first token shows without delay). Every batch costs the GUI thread a
// fixed amount (the answer's text laid out again, the open panel updated, a frame painted), and on
// 2 cores whatever the GUI thread takes stalls one of the engine's two OpenMP threads. At one batch
// a frame (16 ms) the app decoded the 110M-shape model 10-35% slower than inferscope-cli, at 100 ms
// 5-10% (bench/gui_vs_cli.sh). A batch is sent when the next step, if it takes as long as the last
// one, would arrive past the interval: a slow model (one token per 80 ms) still shows every token
// the moment it is made, and a fast one streams ten batches a second.
constexpr qint64 kStepBatchMs = 100;

class BatchingObserver : public GenerationObserver {
public:
    // inspects: this thread is the worker's, which looks inside the loaded model between steps
    // (false for the second model's generation of a side-by-side pair, on a thread of its own).
    BatchingObserver(EngineWorker* worker, quint64 jobId, std::shared_ptr<const EngineWorker::StepHook> hook, std::function<bool()> cancelled,
                     bool inspects = true)
        : worker_(worker), jobId_(jobId), hook_(std::move(hook)), cancelled_(std::move(cancelled)), inspects_(inspects) {
        clock_.start();
    }

    void onPrefill(const PrefillStats& p) override { emit worker_->prefillFinished(jobId_, p); }
    void onStep(const StepRecord& r) override {
        batch_.steps.push_back(r);
        if (hook_) {
            flush();
            if (inspects_) worker_->inspectBetweenSteps(r.forwardUs);
            (*hook_)(r.step, cancelled_);
            return;
        }
        const qint64 now = clock_.elapsed();  // since the last batch
        const qint64 stepMs = now - lastStepAt_;
        lastStepAt_ = now;
        if (r.step == 0 || now + stepMs >= kStepBatchMs) flush();
        if (inspects_) worker_->inspectBetweenSteps(r.forwardUs);  // an open Layers or Attention panel (one atomic load otherwise)
    }
    void onKvCache(const KvCacheStats& s) override { batch_.kv = s; }
    void flush() {
        if (batch_.steps.empty() && !batch_.kv) return;
        emit worker_->stepsReady(jobId_, batch_);
        batch_ = {};
        clock_.restart();
        lastStepAt_ = 0;
    }

private:
    EngineWorker* worker_;
    quint64 jobId_;
    std::shared_ptr<const EngineWorker::StepHook> hook_;
    std::function<bool()> cancelled_;
    bool inspects_;
    StepBatch batch_;
    QElapsedTimer clock_;
    qint64 lastStepAt_ = 0;  // ms after the last batch
};

// See LoadedModel::maxTokenBytes. Every byte of a text must reach some token, or a text of bytes
// no token covers would need fewer tokens than the bound says:
//  - SentencePiece: the byte-fallback tokens <0x00>..<0xFF>;
//  - byte-level BPE: a token for each of the 256 byte-alphabet characters (merging starts from
//    them, so every byte ends in a token). A normal token stands for its decoded bytes (its piece
//    is the byte alphabet's spelling, up to twice as long: Llama 3's 128 spaces are a 256-byte
//    piece); special and user-defined tokens match their piece's text.
// The bound counts bytes of well-formed UTF-8 (the app's texts come from QString): byte-level BPE
// reads an overlong sequence as the shorter character it encodes.
int32_t maxTokenBytes(const Tokenizer& tokenizer) {
    const bool bytePair = tokenizer.family() == TokenizerFamily::BytePair;
    int byteTokens = 0;
    std::bitset<256> singleBytes;
    size_t longest = 0;
    for (int32_t id = 0; id < tokenizer.vocabSize(); ++id) {
        const TokenType type = tokenizer.type(id);
        const std::string bytes = tokenizer.tokenBytes(id);
        byteTokens += type == TokenType::Byte ? 1 : 0;
        if (bytes.size() == 1 && type == TokenType::Normal) singleBytes.set(uint8_t(bytes[0]));
        const size_t piece = tokenizer.piece(id).size();
        longest = std::max({longest, bytes.size(), bytePair && type == TokenType::Normal ? 0 : piece});
    }
    const bool everyByteCovered = bytePair ? singleBytes.all() : byteTokens == 256;
    return everyByteCovered ? int32_t(std::max<size_t>(longest, 1)) : 0;
}

}  // namespace

EngineWorker::EngineWorker(std::shared_ptr<std::atomic<uint64_t>> cancelThrough, QObject* parent)
    : QObject(parent), cancelThrough_(std::move(cancelThrough)) {}

EngineWorker::~EngineWorker() = default;

void EngineWorker::setStepHook(StepHook hook) {
    std::lock_guard lock(hookMutex_);
    stepHook_ = hook ? std::make_shared<const StepHook>(std::move(hook)) : nullptr;
}

bool EngineWorker::shuttingDown() const { return cancelThrough_->load(std::memory_order_relaxed) == UINT64_MAX; }

void EngineWorker::loadModel(quint64 requestId, const EngineOptions& options) {
    if (shuttingDown()) return;  // the window closed with this load still queued: nobody waits for it
    releaseModelB();             // a comparison's second model: its memory is the new model's
    int lastPercent = -1;
    auto progress = [&](float fraction, std::string_view stage) {
        const int percent = int(fraction * 100.0f);
        if (percent == lastPercent) return;  // at most 101 signals per load
        lastPercent = percent;
        emit loadProgress(requestId, fraction, QString::fromUtf8(stage.data(), qsizetype(stage.size())));
    };
    // The previous engine stays until the new one has loaded: a model that fails to load leaves
    // the app working with the old one.
    auto engine = Engine::load(options, progress);
    if (!engine) {
        emit loadFailed(requestId, QString::fromStdString(engine.error().message));
        return;
    }
    engine_ = std::move(*engine);
    options_ = options;
    modelPath_ = options.modelPath.string();
    lastInspectCostUs_ = 0;  // another model: inspections cost something else
    const LoadedModel m = describeLoaded(*engine_, modelPath_);
    maxTokenBytes_ = m.maxTokenBytes;
    emit modelLoaded(requestId, m);
}

LoadedModel describeLoaded(const Engine& engine, const std::string& path) {
    LoadedModel m;
    m.path = path;
    m.info = engine.info();
    m.device = engine.device().description();
    m.precision = engine.model().precisionSummary();
    m.notices = engine.notices();
    m.contextLength = engine.contextLength();
    m.weightBytesResident = engine.model().weightBytesResident();
    m.weightBytesPerToken = engine.model().weightBytesPerToken();
    m.matmulMacsPerToken = engine.model().matmulMacsPerToken();
    m.loadUs = engine.loadUs();
    m.kv = engine.kvStats();
    m.cost = PassCost(engine.hparams(), m.weightBytesPerToken, m.matmulMacsPerToken, m.kv.bytesPerToken);
    m.detectedTemplate = detectChatTemplate(m.info.chatTemplate);
    m.tokenizer = engine.sharedTokenizer();
    m.maxTokenBytes = maxTokenBytes(*m.tokenizer);
    m.vocabularyHash = vocabularyHash(m.tokenizer->vocabSize(), [&tok = *m.tokenizer](int32_t id) { return tokenTextOf(tok, id); });
    return m;
}

void EngineWorker::generate(const GenerationJob& job) {
    if (shuttingDown()) return;
    if (!engine_) {
        emit generationFailed(job.id, tr("No model is loaded."));
        return;
    }
    // The comparison's second model writes this answer: the one the last comparison loaded.
    const bool byB = !job.otherModel.empty();
    if (byB && (!engineB_ || modelPathB_ != job.otherModel)) {
        emit generationFailed(job.id, tr("The second model of the comparison is no longer loaded: compare again to continue with it."));
        return;
    }
    runJob(byB ? *engineB_ : *engine_, job, byB, false);
}

void EngineWorker::runJob(Engine& engine, const GenerationJob& job, bool byB, bool besideA) {
    auto cancelled = [this, id = job.id] { return cancelThrough_->load(std::memory_order_relaxed) >= id; };
    if (job.threads) {
        const std::string before = engine.device().description();
        if (auto ok = engine.setThreads(*job.threads); !ok) {
            emit generationFailed(job.id, QString::fromStdString(ok.error().message));
            return;
        }
        if (!byB && engine.device().description() != before) emit deviceChanged(QString::fromStdString(engine.device().description()));
    }
    if (job.resetCache) engine.reset();
    // A prompt that cannot fit is refused before tokenizing: 10 MB of text takes SentencePiece
    // about 15 s (during which neither stop nor closing the window could interrupt it).
    int64_t atLeast = 0;
    for (const PromptChunk& c : job.chunks)
        atLeast += c.hasTokens ? int64_t(c.tokens.size()) : minTokensFor(int64_t(c.text.size()), byB ? 0 : maxTokenBytes_);
    if (atLeast > engine.contextLength()) {
        emit generationFailed(job.id, tr("the prompt is at least %1 tokens but the context holds %2; shorten it or load with a larger context")
                                          .arg(atLeast).arg(engine.contextLength()));
        return;
    }
    // Tokenize the text chunks here, off the GUI thread (a long paste can take a while).
    GenerateRequest req;
    QList<QList<int>> chunkTokens;
    req.prompt = tokenizeChunks(engine.tokenizer(), job.chunks, &chunkTokens);
    emit promptPrepared(job.id, chunkTokens);
    req.sampler = job.sampler;
    req.maxTokens = job.maxTokens;
    req.stopStrings = job.stopStrings;
    req.useKvCache = job.useKvCache;
    req.replayWidth = job.replayWidth;
    req.inspect = job.inspect;
    req.grammar = job.grammar;
    req.grammarPrefix = job.grammarPrefix;
    if (byB) req.inspect = {};  // Layers and Attention look inside the loaded model
    if (job.speculative && !byB) {
        auto speculative = speculativeFor(*job.speculative);
        if (!speculative) {
            emit generationFailed(job.id, tr("Speculative decoding: %1 Choose another draft model or turn it off in Settings → Speculative decoding.")
                                              .arg(QString::fromStdString(speculative.error().message)));
            return;
        }
        req.speculative = *speculative;
        req.inspect = {};  // not while verifying drafts: Layers and Attention re-run a position on demand
    }

    std::shared_ptr<const StepHook> hook;
    if (!besideA) {
        std::lock_guard lock(hookMutex_);
        hook = stepHook_;
        startGenerationBudget();
    }
    BatchingObserver observer(this, job.id, std::move(hook), cancelled, !besideA);
    auto result = engine.generate(req, &observer, cancelled);
    observer.flush();
    if (!result) {
        emit generationFailed(job.id, QString::fromStdString(result.error().message));
        return;
    }
    emit generationFinished(job.id, *result);
}

Result<SpeculativeOptions> EngineWorker::speculativeFor(const SpeculativeJob& job) {
    SpeculativeOptions o;
    o.source = job.source;
    o.maxDraft = job.maxDraft;
    o.ngramMin = 1;
    o.ngramMax = std::max(1, job.ngramMax);
    if (job.source == DraftSource::NGram) return o;
    const std::string& path = job.draftModelPath;
    if (path.empty()) return fail(ErrorKind::InvalidArgument, "no draft model is chosen.");
    if (!draftEngine_ || draftPath_ != path || draftContext_ != engine_->contextLength()) {
        draftEngine_.reset();  // the old one's memory first
        draftPath_.clear();
        EngineOptions d = options_;  // the model's device, threads and KV type
        d.modelPath = path;
        d.tokenizerPath.reset();
        d.contextLength = engine_->contextLength();  // it drafts for every position the model reaches
        auto loaded = Engine::load(d);
        if (!loaded) return fail(loaded.error().kind, "the draft model " + path + " cannot be loaded: " + loaded.error().message + ".");
        draftEngine_ = std::move(*loaded);
        draftPath_ = path;
        draftContext_ = engine_->contextLength();
    }
    if (auto same = checkSameVocabulary(engine_->tokenizer(), draftEngine_->tokenizer()); !same)
        return fail(same.error().kind, "the draft model " + path + " does not fit this model: " + same.error().message + ".");
    if (draftEngine_->device().threads() != engine_->device().threads())
        if (auto ok = draftEngine_->setThreads(engine_->device().threads()); !ok) return fail(ok.error().kind, "draft model: " + ok.error().message);
    o.draftModel = draftEngine_.get();
    return o;
}

}  // namespace inferscope

namespace inferscope {

void EngineWorker::measureMachine() {
    if (!engine_ || shuttingDown()) return;
    ComputeDevice& device = engine_->mutableDevice();
    device.bindThreads();
    double bandwidth = 0;
    {
        ReadBandwidthProbe probe;  // 512 MiB, freed right after
        bandwidth = probe.measure(device.threads(), 3);
    }
    // Square-ish shapes like a 2048-wide model's prefill, about a quarter second each.
    const double f32 = device.measureMatmulPeak(ComputeDevice::PeakType::F32, 256, 2048, 2048, 0.25);
    const double bf16 = device.measureMatmulPeak(ComputeDevice::PeakType::BF16, 256, 2048, 2048, 0.25);
    emit machineMeasured(bandwidth, f32, bf16);
}

}  // namespace inferscope
