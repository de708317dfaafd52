// Engine's sessions (engine_group.h): another context on the same model, and where a session's
// passes run.
#include <fmt/format.h>

#include <cassert>

#include "engine/engine.h"
#include "engine/shared_passes.h"

namespace inferscope {

Result<std::unique_ptr<Engine>> Engine::newSession(int32_t contextLength, SharedPasses* passes) {
    assert(passes);
    auto context = model_->createContext(contextLength, context_->maxBatch(), context_->cache().type());
    if (!context) return std::unexpected(context.error());
    std::unique_ptr<Engine> session(new Engine());
    session->info_ = info_;
    session->device_ = device_;
    session->tokenizer_ = tokenizer_;
    session->model_ = model_;
    session->context_ = std::move(*context);
    session->notices_ = notices_;
    session->tokenTrie_ = tokenTrie_;
    session->loadUs_ = loadUs_;
    session->passes_ = passes_ = passes;
    return session;
}

Result<void> Engine::setContextLength(int32_t contextLength) {
    if (contextLength < 1) return fail(ErrorKind::InvalidArgument, fmt::format("context length must be positive, got {}", contextLength));
    if (contextLength == this->contextLength()) return {};
    if (passes_) return fail(ErrorKind::InvalidArgument, "a session of a group keeps its context length");
    auto context = model_->createContext(contextLength, context_->maxBatch(), context_->cache().type());
    if (!context) return std::unexpected(context.error());
    context_ = std::move(*context);
    cachedTokens_.clear();
    return {};
}

std::span<const float> Engine::runPass(LlamaContext& ctx, std::span<const int32_t> tokens, int32_t position0, CellOrigin origin,
                                       ForwardProbe* probe, float* everyRow) {
    if (passes_) return passes_->forward(*model_, ctx, tokens, position0, origin, probe, everyRow);
    return model_->forward(ctx, tokens, position0, origin, probe, everyRow);
}

}  // namespace inferscope
