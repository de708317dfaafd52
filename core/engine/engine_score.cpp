// Engine::score: the logits of every position of a given sequence (teacher forcing), for
// `inferscope-cli score` and the accuracy checks of quantized formats against llama.cpp.
#include <fmt/format.h>

#include "engine/engine.h"

namespace inferscope {

Result<void> Engine::score(std::span<const int32_t> tokens, const ScoreCallback& onLogits) {
    const int32_t n = int32_t(tokens.size());
    if (n == 0) return fail(ErrorKind::InvalidArgument, "the sequence is empty");
    for (int32_t id : tokens)
        if (id < 0 || id >= hparams().nVocab)
            return fail(ErrorKind::InvalidArgument, fmt::format("token id {} is outside the vocabulary (0 to {})", id, hparams().nVocab - 1));
    if (n > contextLength())
        return fail(ErrorKind::InvalidArgument,
                    fmt::format("the sequence is {} tokens but the context holds {}; shorten it or load with a larger context", n,
                                contextLength()));
    if (auto ok = checkModelFile(); !ok) return std::unexpected(ok.error());
    device_->bindThreads();
    truncate(0);
    for (int32_t pos = 0; pos < n; ++pos) {
        const auto logits = model_->forward(*context_, tokens.subspan(size_t(pos), 1), pos, CellOrigin::Prompt);
        cachedTokens_.push_back(tokens[size_t(pos)]);
        if (auto ok = checkModelFile(); !ok) return std::unexpected(ok.error());
        onLogits(pos, logits);
    }
    return {};
}

}  // namespace inferscope
