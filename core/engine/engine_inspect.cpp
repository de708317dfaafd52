// Engine::inspectPosition: the logit lens and attention weights of a cached position, from one
// decode pass re-run over the KV cache (engine.h says what is exact and why).
//
// Why a re-run and not only capture: a token picked in the GUI is usually long past, and keeping
// every layer's residual and every head's weights for every step would cost memory growing with
// the square of the answer. Re-running one position costs one decode pass plus the LM heads and
// changes nothing: the pass reads the cached keys and values up to the position (the later ones
// are there but never read) and writes none. Capture during the real step (GenerateRequest::inspect)
// serves the CLI and following the stream, and is exact for the first step too.
#include <chrono>

#include <fmt/format.h>

#include "engine/engine.h"
#include "engine/inspection_readout.h"

namespace inferscope {

Result<PositionInspection> Engine::inspectPosition(int32_t position, const InspectOptions& options) {
    const auto t0 = std::chrono::steady_clock::now();
    if (position < 0 || position >= int32_t(cachedTokens_.size()))
        return fail(ErrorKind::InvalidArgument, cachedTokens_.empty()
                                                    ? fmt::format("position {} is not cached: the cache is empty", position)
                                                    : fmt::format("position {} is not cached (positions 0 to {} are)", position,
                                                                  cachedTokens_.size() - 1));
    if (auto ok = checkInspectOptions(options); !ok) return std::unexpected(ok.error());
    if (auto ok = checkModelFile(); !ok) return std::unexpected(ok.error());
    device_->bindThreads();
    probe_.rerun = true;
    probe_.keepAttention = options.attention;
    runPass(*context_, std::span(cachedTokens_).subspan(size_t(position), 1), position, CellOrigin::Prompt, &probe_);
    if (auto ok = checkModelFile(); !ok) return std::unexpected(ok.error());
    auto inspection = readInspection(*model_, probe_, cachedTokens_[size_t(position)], options);
    if (!inspection) return std::unexpected(inspection.error());
    inspection->us = std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - t0).count();
    return inspection;
}

}  // namespace inferscope
