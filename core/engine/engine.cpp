#include "engine/engine.h"

#include "grammar/grammar_matcher.h"

#include <algorithm>
#include <cassert>
#include <chrono>
#include <fmt/format.h>

#include "common/memory_budget.h"
#include "common/prefix.h"
#include "engine/highest_logits.h"
#include "engine/inspection_readout.h"
#include "engine/load_memory.h"
#include "engine/shared_passes.h"
#include "engine/stop_strings.h"

namespace inferscope {
namespace {

using Clock = std::chrono::steady_clock;
int64_t usSince(Clock::time_point t0) {
    return std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - t0).count();
}

// The OutOfMemory message of a load that does not fit: the figures, and what would fit instead.
std::string doesNotFit(const std::string& model, const LoadFootprint& footprint, const FitAssessment& fit,
                       const LoadShape& shape, const MemoryFigures& have, const GgufFile& file, const LlamaHParams& hp) {
    const MemoryNeed need = footprint.need(shape);
    const MemoryShortfall& shortfall = *fit.shortfall;
    std::string text = fmt::format(
        "{} does not fit in memory with a context of {} tokens: it needs {} (weights {}, KV cache {}, buffers {}) "
        "where {} allows {}",
        model, shape.nCtx, formatBytes(shortfall.needed), formatBytes(need.weightsMapped + need.weightsConverted),
        formatBytes(need.kvCache), formatBytes(need.buffers), shortfall.limit, formatBytes(shortfall.allowed));
    std::vector<std::string> tips;
    if (fit.context > 0) tips.push_back(fmt::format("a smaller context (up to {} tokens fit)", fit.context));
    auto fitsWith = [&](LoadShape other) { return !findMemoryShortfall(estimateLoadMemory(file, hp, other), have); };
    if (shape.kvType == KvType::F32 && fitsWith({shape.precision, shape.nCtx, shape.batch, KvType::F16, shape.threads}))
        tips.push_back("an F16 KV cache");
    for (auto [precision, name] : {std::pair{ComputePrecision::BF16, "BF16 compute"}, std::pair{ComputePrecision::Int8, "INT8 compute"}})
        if (shape.precision != precision && fitsWith({precision, shape.nCtx, shape.batch, shape.kvType, shape.threads}))
            tips.push_back(name);
    if (tips.empty()) return text + "; the weights alone do not fit: choose a smaller model";
    text += "; try ";
    for (size_t i = 0; i < tips.size(); ++i) text += (i == 0 ? "" : i + 1 == tips.size() ? " or " : ", ") + tips[i];
    return text;
}

}  // namespace

Engine::~Engine() = default;

Result<std::unique_ptr<Engine>> Engine::load(const EngineOptions& options, const LoadProgress& progress) {
    const auto t0 = Clock::now();
    std::unique_ptr<Engine> engine(new Engine());
    auto file = GgufFile::open(options.modelPath, options.privateWeights ? MappedFile::Pages::Private : MappedFile::Pages::Shared);
    if (!file) return std::unexpected(file.error());
    // A file truncated while it is read makes what follows read zeros and fail for that reason
    // ("missing tensor", "token 5 is empty"): say what really happened.
    auto failed = [&file](const Error& e) {
        auto ok = file->mapping().checkUnchanged();
        return std::unexpected(ok ? e : ok.error());
    };
    auto info = describeModel(*file, options.modelPath.stem().string());
    if (!info) return failed(info.error());
    engine->info_ = std::move(*info);
    const LlamaHParams& hp = engine->info_.hparams;

    // Tokenizer: from the GGUF vocabulary, or a tokenizer.model that must match the model's vocabulary size.
    auto tokenizer = options.tokenizerPath ? Tokenizer::fromModelFile(*options.tokenizerPath) : Tokenizer::fromGguf(*file);
    if (!tokenizer) return failed(tokenizer.error());
    if ((*tokenizer)->vocabSize() != hp.nVocab)
        return fail(ErrorKind::BadFile, fmt::format("the tokenizer has {} tokens but the model's embedding has {} rows",
                                                    (*tokenizer)->vocabSize(), hp.nVocab));
    engine->tokenizer_ = std::move(*tokenizer);
    // The header and the vocabulary were read from the mapping: a truncation meanwhile shows now.
    if (auto ok = file->mapping().checkUnchanged(); !ok) return std::unexpected(ok.error());

    auto device = ComputeDevice::create(options.device, options.threads);
    if (!device) return std::unexpected(device.error());
    engine->device_ = std::move(*device);
    if (!engine->device_->notice().empty()) engine->notices_.push_back(engine->device_->notice());
    engine->device_->bindThreads();

    // The context: as asked (never past the trained length, where RoPE was not trained, which a
    // notice says), or by default the trained length, or the largest context that fits in memory
    // now when the trained length does not (a notice says so).
    int32_t nCtx = options.contextLength;
    if (nCtx < 0) return fail(ErrorKind::InvalidArgument, fmt::format("context length must be positive, got {}", nCtx));
    const bool defaultContext = nCtx == 0;
    if (defaultContext) nCtx = hp.nCtxTrain;
    if (nCtx > hp.nCtxTrain) {
        engine->notices_.push_back(fmt::format("context length {} capped to the model's trained length {}", nCtx, hp.nCtxTrain));
        nCtx = hp.nCtxTrain;
    }
    if (options.batchSize < 1)
        return fail(ErrorKind::InvalidArgument, fmt::format("batch size must be positive, got {}", options.batchSize));

    KvType kvType = options.kvType;
    if (auto ok = checkKvHeadDim(kvType, hp.headDim); !ok) {
        if (!options.kvTypeFallback) return std::unexpected(ok.error());
        engine->notices_.push_back(fmt::format("KV cache f16 instead of {}: {}", kvTypeName(kvType), ok.error().message));
        kvType = KvType::F16;  // every head dim takes it; half F32's memory
    }
    // Before any weight is converted or the cache allocated: weights + KV cache + buffers must fit
    // in available memory and in the process's address-space and data limits.
    LoadShape shape{options.precision, nCtx, options.batchSize, kvType, engine->device_->threads()};
    const LoadFootprint footprint = loadFootprint(*file, hp, options.precision);
    const MemoryFigures have = readMemoryFigures();
    const FitAssessment fit = assessFit(footprint, shape, have);
    if (fit.verdict == FitVerdict::FitsSmallerContext && defaultContext) {
        // The limit that stops the context there: the one a position more would exceed.
        LoadShape onMore = shape;
        onMore.nCtx = fit.context + 1;
        const MemoryShortfall edge = findMemoryShortfall(footprint.need(onMore), have).value_or(*fit.shortfall);
        engine->notices_.push_back(fmt::format("context {} tokens: the trained length {} does not fit in memory now ({} allows {})",
                                               fit.context, nCtx, edge.limit, formatBytes(edge.allowed)));
        nCtx = shape.nCtx = fit.context;
    } else if (fit.verdict != FitVerdict::Fits) {
        return fail(ErrorKind::OutOfMemory, doesNotFit(engine->info_.name, footprint, fit, shape, have, *file, hp));
    }

    auto model = LlamaModel::load(std::move(*file), *engine->device_, options.precision, progress);
    if (!model) return std::unexpected(model.error());
    engine->model_ = std::move(*model);

    auto context = engine->model_->createContext(nCtx, options.batchSize, kvType);
    if (!context) return std::unexpected(context.error());
    engine->context_ = std::move(*context);
    if (options.warmUp) engine->model_->warmUp(*engine->context_);
    // Converting the weights and the warm-up read them all: the file must still be what was mapped.
    if (auto ok = engine->checkModelFile(); !ok) return std::unexpected(ok.error());
    engine->loadUs_ = usSince(t0);
    return engine;
}

Result<void> Engine::checkModelFile() {
    if (broken_) return std::unexpected(*broken_);
    if (auto ok = model_->file().mapping().checkUnchanged(); !ok) {
        broken_ = ok.error();
        return ok;
    }
    return {};
}

void Engine::truncate(int32_t nTokens) {
    nTokens = std::clamp(nTokens, 0, int32_t(cachedTokens_.size()));
    context_->cache().truncate(nTokens);
    cachedTokens_.resize(size_t(nTokens));
}

std::span<const float> Engine::runBatched(std::span<const int32_t> tokens, int32_t from, int32_t promptLength,
                                          ForwardProbe* probe) {
    std::span<const float> logits;
    const int32_t n = int32_t(tokens.size());
    for (int32_t pos = from; pos < n;) {
        // A batch never straddles the prompt/generated boundary, so every cell keeps its origin.
        const int32_t boundary = pos < promptLength ? promptLength : n;
        const int32_t count = std::min({context_->maxBatch(), boundary - pos, n - pos});
        // generate() never asks past the context: the cache, the RoPE table and the activations
        // are sized for it (the sanitizer build keeps asserts, so every test checks this).
        assert(count >= 1 && pos + count <= context_->cache().capacity());
        logits = runPass(*context_, tokens.subspan(size_t(pos), size_t(count)), pos,
                                 pos < promptLength ? CellOrigin::Prompt : CellOrigin::Generated, pos + count == n ? probe : nullptr);
        cachedTokens_.insert(cachedTokens_.end(), tokens.begin() + pos, tokens.begin() + pos + count);
        pos += count;
    }
    return logits;
}

Result<void> Engine::setThreads(int32_t threads) {
    if (auto ok = device_->setThreads(threads); !ok) return ok;
    return model_->fitThreads(*context_);  // attention's scratch has a slice per thread
}

Result<GenerationSummary> Engine::generate(const GenerateRequest& request, GenerationObserver* observer,
                                           const std::atomic<bool>* cancel) {
    if (!cancel) return generate(request, observer, CancelCheck{});
    return generate(request, observer, CancelCheck([cancel] { return cancel->load(std::memory_order_relaxed); }));
}

const grammar::TokenTrie& Engine::tokenTrie() {
    if (!tokenTrie_) {
        const size_t n = size_t(tokenizer_->vocabSize());
        std::vector<std::string> bytes(n);
        for (size_t id = 0; id < n; ++id) bytes[id] = tokenizer_->tokenBytes(int32_t(id));
        // Ends of generation are the grammar's to allow (when complete); BOS ends generation too.
        for (int32_t eog : tokenizer_->endOfGenerationIds())
            if (size_t(eog) < n) bytes[size_t(eog)].clear();
        if (tokenizer_->bosId() >= 0 && size_t(tokenizer_->bosId()) < n) bytes[size_t(tokenizer_->bosId())].clear();
        tokenTrie_ = std::make_shared<const grammar::TokenTrie>(grammar::TokenTrie::build(bytes));
    }
    return *tokenTrie_;
}

Result<GenerationSummary> Engine::generate(const GenerateRequest& request, GenerationObserver* observer,
                                           const CancelCheck& cancel) {
    const auto tStart = Clock::now();
    const int32_t nCtx = contextLength();
    const int32_t nPrompt = int32_t(request.prompt.size());
    if (request.maxTokens < 1)
        return fail(ErrorKind::InvalidArgument, fmt::format("max tokens must be at least 1, got {}", request.maxTokens));
    if (nPrompt == 0) return fail(ErrorKind::InvalidArgument, "the prompt is empty");
    for (int32_t id : request.prompt)
        if (id < 0 || id >= hparams().nVocab)
            return fail(ErrorKind::InvalidArgument, fmt::format("token id {} is outside the vocabulary (0 to {})", id, hparams().nVocab - 1));
    // Policy: a prompt longer than the context is refused, never cut; what to drop (old turns, the
    // start of a document) is the caller's choice.
    if (nPrompt > nCtx)
        return fail(ErrorKind::InvalidArgument,
                    fmt::format("the prompt is {} tokens but the context holds {}; shorten it or load with a larger context", nPrompt, nCtx));
    if (auto ok = checkInspectOptions(request.inspect.optionsFor(0)); !ok) return std::unexpected(ok.error());
    if (auto ok = checkSpeculative(request); !ok) return std::unexpected(ok.error());
    if (request.grammar && request.speculative)
        return fail(ErrorKind::InvalidArgument, "a grammar cannot be combined with speculative decoding yet");
    if (!request.grammarPrefix.empty()) {
        if (!request.grammar) return fail(ErrorKind::InvalidArgument, "a grammar prefix needs a grammar");
        grammar::GrammarMatcher probe(request.grammar);
        if (auto ok = probe.acceptBytes(request.grammarPrefix); !ok)
            return fail(ErrorKind::InvalidArgument, "the kept start of the answer does not match the grammar: " + ok.error().message);
    }
    if (auto ok = checkModelFile(); !ok) return std::unexpected(ok.error());
    auto cancelled = [&cancel] { return cancel && cancel(); };

    device_->bindThreads();
    KvCache& cache = context_->cache();
    cache.resetCounters();
    GenerationSummary summary;
    // The probe goes to the pass whose logits step `step` will sample (GenerateRequest::inspect).
    auto probeFor = [&](int32_t step) -> ForwardProbe* {
        if (!request.inspect.wants(step)) return nullptr;
        probe_.rerun = false;
        probe_.keepAttention = step == request.inspect.attentionStep;
        return &probe_;
    };

    // ---- prefill: the prompt minus what the cache already holds, in one batched pass ----------
    int32_t reuse = 0;
    if (request.useKvCache) {
        reuse = int32_t(commonPrefixLength(cachedTokens_, request.prompt));
        reuse = std::min(reuse, nPrompt - 1);  // the last prompt token must run to give logits
    }
    truncate(reuse);
    int32_t copied = 0;
    if (passes_ && request.useKvCache && reuse < nPrompt - 1) {
        // A session of a group: another session's cache may hold more of the prompt.
        const int32_t n = passes_->copyLongestPrefix(*context_, std::span(request.prompt).first(size_t(nPrompt - 1)), reuse);
        if (n > reuse) {
            cachedTokens_.assign(request.prompt.begin(), request.prompt.begin() + n);
            copied = n - reuse;
            reuse = n;
        }
    }
    std::vector<int32_t> sequence = request.prompt;  // prompt, then generated tokens
    auto t0 = Clock::now();
    std::span<const float> logits;
    for (int32_t pos = reuse; pos < nPrompt;) {  // batch by batch, so a cancel lands within one batch
        if (cancelled()) {
            summary.reason = FinishReason::Cancelled;
            summary.kv = cache.stats();
            if (observer) observer->onFinish(summary);
            return summary;
        }
        const int32_t count = std::min(context_->maxBatch(), nPrompt - pos);
        logits = runBatched(std::span(sequence).first(size_t(pos + count)), pos, nPrompt, pos + count == nPrompt ? probeFor(0) : nullptr);
        if (auto ok = checkModelFile(); !ok) return std::unexpected(ok.error());  // the logits may be of zeros
        pos += count;
    }
    summary.prefill = PrefillStats{nPrompt, reuse, nPrompt - reuse, usSince(t0), copied};
    // A session of a group: from here its one-token passes join the other sessions' decode batches
    // (before the observer hears of the prefill, so that a batch is never run without it).
    struct Decoding {
        SharedPasses* passes;
        const LlamaContext& ctx;
        Decoding(SharedPasses* p, const LlamaContext& c) : passes(p), ctx(c) { if (passes) passes->beginDecoding(ctx); }
        ~Decoding() { if (passes) passes->endDecoding(ctx); }
        Decoding(const Decoding&) = delete;
        Decoding& operator=(const Decoding&) = delete;
    } decoding(request.useKvCache && !request.speculative ? passes_ : nullptr, *context_);
    if (observer) {
        observer->onPrefill(summary.prefill);
        observer->onKvCache(cache.stats());
    }

    // ---- decode: sample, then one forward pass per new token ------------------------------------
    if (request.speculative) return decodeSpeculative(request, observer, cancel, std::move(sequence), logits, std::move(summary), tStart);
    auto chain = SamplerChain::create(request.sampler);
    if (!chain) return std::unexpected(chain.error());
    SamplerChain& sampler = *chain;
    std::optional<grammar::GrammarMatcher> matcher;
    std::vector<uint8_t> allowed;
    if (request.grammar) {
        matcher.emplace(request.grammar);
        allowed.resize(logits.size());
        if (auto ok = matcher->acceptBytes(request.grammarPrefix); !ok) return std::unexpected(ok.error());  // checked above
    }
    StopStringMatcher stops(request.stopStrings);
    int64_t forwardUs = 0;
    for (int32_t step = 0;; ++step) {
        t0 = Clock::now();
        StepRecord rec;
        keepRequestedLogits(logits, request, rec);
        if (matcher) {  // the grammar's mask; end of generation only where the text is complete
            matcher->fillMask(tokenTrie(), allowed);
            if (matcher->overflowed())
                return fail(ErrorKind::InvalidArgument,
                            fmt::format("the grammar is too ambiguous to follow after {} generated tokens (more than {} open "
                                        "parses, {} states or {} expansion steps for one token)",
                                        step, grammar::GrammarMatcher::kMaxStacks, grammar::GrammarMatcher::kMaxLiveStates,
                                        grammar::GrammarMatcher::kMaxWorkPerToken));
            const uint8_t complete = matcher->isComplete() ? 1 : 0;
            for (int32_t eog : tokenizer_->endOfGenerationIds())
                if (size_t(eog) < allowed.size()) allowed[size_t(eog)] = complete;
            if (std::find(allowed.begin(), allowed.end(), uint8_t(1)) == allowed.end()) {
                if (complete) {  // finished, and the vocabulary has no end-of-generation token
                    summary.reason = FinishReason::EndOfGeneration;
                    break;
                }
                return fail(ErrorKind::InvalidArgument,
                            fmt::format("the grammar cannot continue after {} generated tokens: no token of the vocabulary "
                                        "writes what it expects next", step));
            }
        }
        // The penalty looks at the sequence's last repeatLastN.
        auto sample = matcher ? sampler.sample(logits, sequence, allowed) : sampler.sample(logits, sequence);
        if (!sample) return std::unexpected(Error{ErrorKind::Device, "the model produced invalid logits: " + sample.error().message});
        rec.sample = std::move(*sample);
        rec.sampleUs = usSince(t0);
        rec.step = step;
        rec.position = int32_t(sequence.size());
        rec.forwardUs = forwardUs;
        if (request.inspect.wants(step)) {  // after the timings: what the readout costs is its own
            auto inspection = readInspection(*model_, probe_, sequence[size_t(probe_.position)], request.inspect.optionsFor(step));
            if (!inspection) return std::unexpected(inspection.error());
            rec.inspection = std::make_shared<const PositionInspection>(std::move(*inspection));
        }
        const int32_t id = rec.sample.id;
        // A generated BOS starts a new document (how llama2.c's story models end a story): it ends
        // generation like EOS does.
        rec.endOfGeneration = tokenizer_->isEndOfGeneration(id) || id == tokenizer_->bosId();
        rec.piece = rec.endOfGeneration ? std::string() : tokenizer_->tokenBytes(id);
        if (matcher && !rec.endOfGeneration)
            if (auto ok = matcher->acceptBytes(rec.piece); !ok)  // the mask allowed it: cannot happen
                return fail(ErrorKind::InvalidArgument, "the grammar refused the sampled token: " + ok.error().message);
        if (step == 0) summary.timeToFirstTokenUs = usSince(tStart);
        sequence.push_back(id);
        summary.tokens.push_back(id);
        summary.text += rec.piece;
        summary.nGenerated = step + 1;
        if (observer) observer->onStep(rec);

        if (rec.endOfGeneration) {
            summary.reason = FinishReason::EndOfGeneration;
            break;
        }
        if (auto at = stops.find(summary.text)) {
            summary.text.resize(*at);
            summary.reason = FinishReason::StopString;
            break;
        }
        if (summary.nGenerated >= request.maxTokens) {
            summary.reason = FinishReason::MaxTokens;
            break;
        }
        if (int32_t(sequence.size()) > nCtx) {  // the new token has no cache slot left
            summary.reason = FinishReason::ContextFull;
            break;
        }
        if (cancelled()) {
            summary.reason = FinishReason::Cancelled;
            break;
        }
        t0 = Clock::now();
        if (request.useKvCache) {
            logits = runBatched(sequence, int32_t(sequence.size()) - 1, nPrompt, probeFor(step + 1));
        } else {
            truncate(0);  // no cache: recompute every position's K and V
            logits = runBatched(sequence, 0, nPrompt, probeFor(step + 1));
        }
        forwardUs = usSince(t0);
        if (auto ok = checkModelFile(); !ok) return std::unexpected(ok.error());
        summary.decodeUs += forwardUs;
        summary.nDecodePasses += 1;
        summary.decodedTokens += 1;
        if (observer) observer->onKvCache(cache.stats());
    }
    summary.kv = cache.stats();
    if (observer) observer->onFinish(summary);
    return summary;
}

}  // namespace inferscope
