// Engine::score: the logits of every position of a given sequence (teacher forcing), for
// `inferscope-cli score` and `perplexity`, the accuracy checks of quantized formats against
// llama.cpp, and what a KV cache type costs (kv_cost.h: two caches in lockstep).
#include <fmt/format.h>

#include <algorithm>

#include "engine/engine.h"

namespace inferscope {

Result<void> Engine::checkScoredSequence(std::span<const int32_t> tokens) {
    const int32_t n = int32_t(tokens.size());
    if (n == 0) return fail(ErrorKind::InvalidArgument, "the sequence is empty");
    for (int32_t id : tokens)
        if (id < 0 || id >= hparams().nVocab)
            return fail(ErrorKind::InvalidArgument, fmt::format("token id {} is outside the vocabulary (0 to {})", id, hparams().nVocab - 1));
    if (n > contextLength())
        return fail(ErrorKind::InvalidArgument,
                    fmt::format("the sequence is {} tokens but the context holds {}; shorten it or load with a larger context", n,
                                contextLength()));
    return checkModelFile();
}

Result<void> Engine::score(std::span<const int32_t> tokens, const ScoreCallback& onLogits) {
    if (auto ok = checkScoredSequence(tokens); !ok) return ok;
    device_->bindThreads();
    truncate(0);
    for (int32_t pos = 0; pos < int32_t(tokens.size()); ++pos) {
        const auto logits = runPass(*context_, tokens.subspan(size_t(pos), 1), pos, CellOrigin::Prompt);
        cachedTokens_.push_back(tokens[size_t(pos)]);
        if (auto ok = checkModelFile(); !ok) return std::unexpected(ok.error());
        onLogits(pos, logits);
    }
    return {};
}

int32_t Engine::maxScoreRows() const {
    const int64_t byMemory = (int64_t(32) << 20) / (int64_t(hparams().nVocab) * int64_t(sizeof(float)));
    return int32_t(std::max<int64_t>(1, std::min<int64_t>(context_->maxBatch(), byMemory)));
}

Result<void> Engine::scoreRows(std::span<const int32_t> tokens, int32_t from, int32_t count, std::vector<float>& logits) {
    if (from == 0)
        if (auto ok = checkScoredSequence(tokens); !ok) return ok;
    if (from < 0 || count < 1 || count > maxScoreRows() || size_t(from) + size_t(count) > tokens.size())
        return fail(ErrorKind::InvalidArgument, fmt::format("rows {} to {} of {} tokens, at most {} at once", from, from + count, tokens.size(),
                                                            maxScoreRows()));
    if (from == 0) truncate(0);
    if (cachedTokens_.size() != size_t(from) || !std::equal(cachedTokens_.begin(), cachedTokens_.end(), tokens.begin()))
        return fail(ErrorKind::InvalidArgument, "scoreRows: the cache does not hold the tokens before these rows");
    device_->bindThreads();
    logits.resize(size_t(count) * size_t(hparams().nVocab));
    runPass(*context_, tokens.subspan(size_t(from), size_t(count)), from, CellOrigin::Prompt, nullptr, logits.data());
    cachedTokens_.insert(cachedTokens_.end(), tokens.begin() + from, tokens.begin() + from + count);
    return checkModelFile();
}

Result<void> Engine::scoreWithKvTypes(KvType a, KvType b, std::span<const int32_t> tokens, const PairScoreCallback& onLogits,
                                      const CancelCheck& cancel) {
    if (auto ok = checkScoredSequence(tokens); !ok) return ok;
    const int32_t n = int32_t(tokens.size());
    // Decode passes only (one position each), as score() runs them: a batch of 1.
    auto contextA = model_->createContext(n, 1, a);
    if (!contextA) return std::unexpected(contextA.error());
    auto contextB = model_->createContext(n, 1, b);
    if (!contextB) return std::unexpected(contextB.error());
    device_->bindThreads();
    for (int32_t pos = 0; pos < n; ++pos) {
        if (cancel && cancel()) return fail(ErrorKind::Cancelled, "cancelled");
        const auto token = tokens.subspan(size_t(pos), 1);
        // Each in its own context's buffer: A's stays valid while B runs.
        const auto logitsA = runPass(**contextA, token, pos, CellOrigin::Prompt);
        const auto logitsB = runPass(**contextB, token, pos, CellOrigin::Prompt);
        if (auto ok = checkModelFile(); !ok) return std::unexpected(ok.error());
        onLogits(pos, logitsA, logitsB);
    }
    return {};
}

Result<void> Engine::setKvType(KvType type) {
    if (type == kvType()) return {};
    if (passes_) return fail(ErrorKind::InvalidArgument, "a session of a group keeps its KV cache's type");
    if (auto ok = checkKvHeadDim(type, hparams().headDim); !ok) return ok;
    auto context = model_->createContext(contextLength(), context_->maxBatch(), type);
    if (!context) return std::unexpected(context.error());
    context_ = std::move(*context);
    cachedTokens_.clear();
    return {};
}

}  // namespace inferscope
