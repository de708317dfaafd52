#include "kv_cache/kv_calculator.h"

#include <algorithm>
#include <fmt/format.h>

namespace inferscope {
namespace {

// out = a × b; false on overflow.
bool mul(uint64_t a, uint64_t b, uint64_t& out) { return !__builtin_mul_overflow(a, b, &out); }

}  // namespace

Result<uint64_t> kvBytesPerElement(std::string_view dtype) {
    if (dtype == "f32") return 4;
    if (dtype == "f16" || dtype == "bf16") return 2;
    if (dtype == "int8" || dtype == "q8") return 1;
    return fail(ErrorKind::InvalidArgument, fmt::format("dtype must be f32, f16, bf16 or int8, got '{}'", dtype));
}

Result<KvElementSize> kvElementSize(std::string_view dtype) {
    if (dtype == "q8_0") return KvElementSize{34, 32};  // ggml's block: fp16 scale + 32 int8
    if (dtype == "q4_0") return KvElementSize{18, 32};  // fp16 scale + 16 bytes of nibbles
    auto bytes = kvBytesPerElement(dtype);
    if (!bytes) return fail(ErrorKind::InvalidArgument, fmt::format("dtype must be f32, f16, bf16, int8, q8_0 or q4_0, got '{}'", dtype));
    return KvElementSize{*bytes, 1};
}

Result<KvFigures> computeKvFigures(const KvShape& s, uint64_t tokens, uint64_t users) {
    if (s.layers == 0 || s.heads == 0 || s.kvHeads == 0 || s.headDim == 0 || s.bytesPerElement == 0)
        return fail(ErrorKind::InvalidArgument, "layers, heads, KV heads, head dim and element size must be positive");
    if (s.kvHeads > s.heads)
        return fail(ErrorKind::InvalidArgument, fmt::format("KV heads ({}) cannot exceed query heads ({})", s.kvHeads, s.heads));
    if (s.heads % s.kvHeads != 0)
        return fail(ErrorKind::InvalidArgument, fmt::format("query heads ({}) must be a multiple of KV heads ({})", s.heads, s.kvHeads));
    if (s.blockElements == 0 || s.headDim % s.blockElements != 0)
        return fail(ErrorKind::InvalidArgument,
                    fmt::format("head dim ({}) must be a multiple of the block size ({})", s.headDim, s.blockElements));
    if (tokens == 0 || users == 0)
        return fail(ErrorKind::InvalidArgument, "tokens and users must be positive");
    if (s.slidingLayers > s.layers)
        return fail(ErrorKind::InvalidArgument, fmt::format("sliding-window layers ({}) cannot exceed layers ({})", s.slidingLayers, s.layers));
    if (s.slidingLayers > 0 && s.window == 0)
        return fail(ErrorKind::InvalidArgument, "the sliding window must be positive when some layers slide");

    auto perToken = [&](uint64_t kvHeads, uint64_t& out) {
        uint64_t v = 2;
        return mul(v, s.layers, v) && mul(v, kvHeads, v) && mul(v, s.headDim / s.blockElements, v) && mul(v, s.bytesPerElement, v) &&
               ((out = v), true);
    };
    auto total = [&](uint64_t bpt, uint64_t& out) { return mul(bpt, tokens, out) && mul(out, users, out); };

    KvFigures f;
    if (!perToken(s.kvHeads, f.bytesPerToken) || !total(f.bytesPerToken, f.totalBytes) ||
        !perToken(s.heads, f.mhaBytesPerToken) || !total(f.mhaBytesPerToken, f.mhaTotalBytes) ||
        !perToken(1, f.mqaBytesPerToken) || !total(f.mqaBytesPerToken, f.mqaTotalBytes))
        return fail(ErrorKind::InvalidArgument, "the KV-cache size overflows 64 bits");
    // Per layer: global layers keep every token, sliding ones at most the window.
    const uint64_t perLayer = f.bytesPerToken / s.layers;
    const uint64_t kept = s.slidingLayers > 0 ? std::min(tokens, s.window) : tokens;
    uint64_t global = 0, sliding = 0;
    if (!mul(perLayer * (s.layers - s.slidingLayers), tokens, global) || !mul(perLayer * s.slidingLayers, kept, sliding) ||
        !mul(global + sliding, users, f.windowedTotalBytes))
        return fail(ErrorKind::InvalidArgument, "the KV-cache size overflows 64 bits");
    return f;
}

}  // namespace inferscope
