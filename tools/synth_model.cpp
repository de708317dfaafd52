#include "tools/synth_model.h"

#include <omp.h>

#include <array>
#include <cmath>
#include <fmt/format.h>
#include <vector>

#include "common/aligned_buffer.h"
#include "gguf/gguf_file.h"
#include "tools/gguf_writer.h"
#include "gguf/quant_encode.h"
#include "tools/quant_mix.h"

namespace inferscope {
namespace {

constexpr std::array kShapes{
    SynthShape{"tinyllama-1.1b", 2048, 22, 32, 4, 5632, 32000, 2048},
    SynthShape{"llama-110m", 768, 12, 12, 12, 2048, 32000, 2048},
    SynthShape{"stories260k", 64, 5, 8, 4, 172, 512, 512},
    SynthShape{"stories260k-wide", 256, 5, 8, 4, 256, 512, 2048},
    SynthShape{"llama-3.2-1b", 2048, 16, 32, 8, 8192, 128256, 131072, 64, true, true, 500000.0f, "llama-bpe"},
    SynthShape{"llama-3.2-3b", 3072, 28, 24, 8, 8192, 128256, 131072, 128, true, true, 500000.0f, "llama-bpe"},
    SynthShape{"llama-3.1-8b", 4096, 32, 32, 8, 14336, 128256, 131072, 128, false, true, 500000.0f, "llama-bpe"},
    SynthShape{"qwen2.5-1.5b", 1536, 28, 12, 2, 8960, 151936, 32768, 128, true, false, 1000000.0f, "qwen2"},
    SynthShape{"qwen2.5-7b", 3584, 28, 28, 4, 18944, 152064, 32768, 128, false, false, 1000000.0f, "qwen2"},
    SynthShape{"gemma-3-4b", 2560, 34, 8, 4, 10240, 262144, 131072, 256, true, false, 1000000.0f, "llama-spm"},
    SynthShape{"phi-3-mini", 3072, 32, 32, 32, 8192, 32064, 4096, 96, false, false, 10000.0f, "phi-3"},
};
// Llama 3.1's RoPE scaling (rope_freqs.weight as llama.cpp's converter computes it): factor 8,
// low/high frequency factors 1 and 4, original context 8192.
std::vector<float> llama31RopeFreqs(int32_t headDim, float base) {
    std::vector<float> out;
    const double factor = 8, lowFactor = 1, highFactor = 4, oldCtx = 8192;
    const double lowWavelen = oldCtx / lowFactor, highWavelen = oldCtx / highFactor;
    for (int32_t i = 0; i < headDim; i += 2) {
        const double freq = 1.0 / std::pow(double(base), double(i) / headDim);
        const double wavelen = 2 * 3.141592653589793 / freq;
        if (wavelen < highWavelen) out.push_back(1.0f);
        else if (wavelen > lowWavelen) out.push_back(float(factor));
        else {
            const double smooth = (oldCtx / wavelen - lowFactor) / (highFactor - lowFactor);
            out.push_back(float(1.0 / ((1 - smooth) / factor + smooth)));
        }
    }
    return out;
}
int32_t headDimOf(const SynthShape& s) { return s.headDim > 0 ? s.headDim : s.nEmbd / s.nHead; }
constexpr float kStd = 0.02f;
constexpr size_t kChunk = size_t(1) << 20;  // elements generated per write

// SplitMix64: a counter-based generator, so any element can be generated independently (and the
// chunks of a tensor in parallel) and the file depends only on the seed.
inline uint64_t mix(uint64_t x) {
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

// Elements [begin, begin + n) of a tensor's N(0, std²) stream (Box-Muller on pairs).
void normals(uint64_t tensorSeed, uint64_t begin, size_t n, float* out) {
    for (size_t i = 0; i < n; ++i) {
        const uint64_t idx = begin + i;
        const uint64_t r = mix(tensorSeed ^ mix(idx >> 1));
        const double u1 = (double(r >> 40) + 0.5) / double(1ull << 24);            // (0, 1)
        const double u2 = double((r >> 16) & 0xFFFFFF) / double(1ull << 24);       // [0, 1)
        const double radius = std::sqrt(-2.0 * std::log(u1));
        const double angle = 6.283185307179586 * u2;
        out[i] = float(kStd * radius * ((idx & 1) ? std::sin(angle) : std::cos(angle)));
    }
}

struct TensorPlan {
    std::string name;
    std::vector<uint64_t> ne;  // ne[0] innermost
    GgmlType type;
    bool isNorm;
    std::vector<float> values = {};  // given values (rope_freqs) instead of random ones
};

std::vector<TensorPlan> plan(const SynthOptions& o) {
    const auto& s = o.shape;
    const uint64_t E = uint64_t(s.nEmbd), hd = uint64_t(headDimOf(s)), Q = hd * s.nHead, KV = hd * s.nHeadKv,
                   F = uint64_t(s.nFf), V = uint64_t(s.nVocab);
    const int32_t n = s.nLayer;
    auto matrixType = [&](MatrixRole role, int32_t layer, uint64_t cols) { return quantMixType(o.type, role, layer, n, cols); };
    using enum MatrixRole;
    std::vector<TensorPlan> t;
    // Tied: the embedding is the LM head too, and llama-quantize types it as the output.
    t.push_back({"token_embd.weight", {E, V}, matrixType(s.tiedEmbeddings ? Output : TokenEmbedding, 0, E), false});
    if (s.ropeFreqs) {
        auto freqs = llama31RopeFreqs(int32_t(hd), s.ropeBase);
        t.push_back({"rope_freqs.weight", {uint64_t(freqs.size())}, GgmlType::F32, false, std::move(freqs)});
    }
    // Per layer in forward order, Q/K/V and gate/up back to back.
    for (int32_t l = 0; l < s.nLayer; ++l) {
        const std::string p = fmt::format("blk.{}.", l);
        t.push_back({p + "attn_norm.weight", {E}, GgmlType::F32, true});
        t.push_back({p + "attn_q.weight", {E, Q}, matrixType(Other, l, E), false});
        t.push_back({p + "attn_k.weight", {E, KV}, matrixType(Other, l, E), false});
        t.push_back({p + "attn_v.weight", {E, KV}, matrixType(AttnV, l, E), false});
        t.push_back({p + "attn_output.weight", {Q, E}, matrixType(Other, l, Q), false});
        t.push_back({p + "ffn_norm.weight", {E}, GgmlType::F32, true});
        t.push_back({p + "ffn_gate.weight", {E, F}, matrixType(Other, l, E), false});
        t.push_back({p + "ffn_up.weight", {E, F}, matrixType(Other, l, E), false});
        t.push_back({p + "ffn_down.weight", {F, E}, matrixType(FfnDown, l, F), false});
    }
    t.push_back({"output_norm.weight", {E}, GgmlType::F32, true});
    if (!s.tiedEmbeddings) t.push_back({"output.weight", {E, V}, matrixType(Output, n, E), false});
    return t;
}

// Streams one tensor: chunks of kChunk elements generated in parallel, converted, written.
GgufTensorProducer producer(const TensorPlan& t, uint64_t tensorSeed) {
    return [t, tensorSeed](GgufTensorSink& sink) {
        uint64_t total = 1;
        for (uint64_t n : t.ne) total *= n;
        AlignedBuffer<float> values(kChunk);
        AlignedBuffer<uint8_t> bytes(kChunk * 4);
        for (uint64_t begin = 0; begin < total && sink.ok(); begin += kChunk) {
            // Whole blocks: kChunk is a multiple of every block size, and a shorter tail ends the
            // tensor (whose row length is a multiple of its block).
            const size_t n = size_t(std::min<uint64_t>(kChunk, total - begin));
            if (!t.values.empty()) {
                for (size_t i = 0; i < n; ++i) values[i] = t.values[size_t(begin) + i];
            } else if (t.isNorm) {
                for (size_t i = 0; i < n; ++i) values[i] = 1.0f;
            } else {
#pragma omp parallel for schedule(static)
                for (size_t b = 0; b < n; b += 4096) normals(tensorSeed, begin + b, std::min<size_t>(4096, n - b), values.data() + b);
            }
            switch (t.type) {
                case GgmlType::F32: sink.write(values.data(), n * 4); break;
                case GgmlType::F16:
                    fp32ToFp16Row(values.data(), reinterpret_cast<uint16_t*>(bytes.data()), n);
                    sink.write(bytes.data(), n * 2);
                    break;
                case GgmlType::BF16:
                    fp32ToBf16Row(values.data(), reinterpret_cast<uint16_t*>(bytes.data()), n);
                    sink.write(bytes.data(), n * 2);
                    break;
                default: {  // blocks; K-quants search per sub-block, so in parallel pieces of whole blocks
                    const auto info = *ggmlTypeInfo(uint32_t(t.type));
                    constexpr size_t kPiece = 4096;  // a multiple of every block size (32, 256)
#pragma omp parallel for schedule(dynamic)
                    for (size_t b = 0; b < n; b += kPiece)
                        quantizeBlocks(t.type, values.data() + b, bytes.data() + b / info.blockSize * info.typeSize,
                                       std::min(kPiece, n - b));
                    sink.write(bytes.data(), n / info.blockSize * info.typeSize);
                    break;
                }
            }
        }
    };
}

std::string_view synthTypeLabel(GgmlType t) {
    return t == GgmlType::Q4_K ? "Q4_K_M" : t == GgmlType::Q5_K ? "Q5_K_M" : ggmlTypeName(uint32_t(t));
}

}  // namespace

std::span<const SynthShape> synthShapes() { return kShapes; }

Result<SynthShape> findSynthShape(std::string_view name) {
    std::string names;
    for (const auto& s : kShapes) {
        if (s.name == name) return s;
        names += (names.empty() ? "" : ", ") + std::string(s.name);
    }
    return fail(ErrorKind::InvalidArgument, fmt::format("unknown shape '{}'; shapes: {}", name, names));
}

Result<GgmlType> parseSynthType(std::string_view text) {
    if (text == "f32") return GgmlType::F32;
    if (text == "f16") return GgmlType::F16;
    if (text == "bf16") return GgmlType::BF16;
    if (text == "q8_0") return GgmlType::Q8_0;
    if (text == "q4_0") return GgmlType::Q4_0;
    if (text == "q6_k") return GgmlType::Q6_K;
    if (text == "q4_k_m") return GgmlType::Q4_K;
    if (text == "q5_k_m") return GgmlType::Q5_K;
    return fail(ErrorKind::InvalidArgument,
                fmt::format("dtype must be f32, f16, bf16, q8_0, q4_0, q4_k_m, q5_k_m or q6_k, got '{}'", text));
}

uint64_t synthModelBytes(const SynthOptions& options) {
    uint64_t total = 0;
    for (const auto& t : plan(options)) total += *ggmlTensorBytes(uint32_t(t.type), t.ne);
    return total;
}

Result<void> writeSynthModel(const SynthOptions& o, const std::filesystem::path& out) {
    const SynthShape& s = o.shape;
    auto vocab = GgufFile::open(o.vocabFrom);
    if (!vocab) return std::unexpected(Error{vocab.error().kind, fmt::format("vocabulary: {}", vocab.error().message)});
    const GgufValue* tokens = vocab->find("tokenizer.ggml.tokens");
    if (!tokens || tokens->type != GgufType::Array || tokens->elemType != GgufType::String || tokens->count > uint64_t(s.nVocab))
        return fail(ErrorKind::BadFile, fmt::format("{} has no vocabulary of at most {} tokens (tokenizer.ggml.tokens)",
                                                    o.vocabFrom.string(), s.nVocab));
    const uint64_t have = tokens->count, pad = uint64_t(s.nVocab) - have;
    GgufWriter w;
    const uint32_t fileType = quantMixFileType(o.type);
    w.add("general.architecture", GgufMetaValue::string("llama"));
    w.add("general.name", GgufMetaValue::string(fmt::format("synth-{}-{}", s.name, synthTypeLabel(o.type))));
    w.add("general.file_type", GgufMetaValue::u32(fileType));
    w.add("llama.context_length", GgufMetaValue::u32(uint32_t(s.nCtx)));
    w.add("llama.embedding_length", GgufMetaValue::u32(uint32_t(s.nEmbd)));
    w.add("llama.block_count", GgufMetaValue::u32(uint32_t(s.nLayer)));
    w.add("llama.feed_forward_length", GgufMetaValue::u32(uint32_t(s.nFf)));
    w.add("llama.attention.head_count", GgufMetaValue::u32(uint32_t(s.nHead)));
    w.add("llama.attention.head_count_kv", GgufMetaValue::u32(uint32_t(s.nHeadKv)));
    w.add("llama.rope.dimension_count", GgufMetaValue::u32(uint32_t(headDimOf(s))));
    if (s.headDim > 0) {
        w.add("llama.attention.key_length", GgufMetaValue::u32(uint32_t(s.headDim)));
        w.add("llama.attention.value_length", GgufMetaValue::u32(uint32_t(s.headDim)));
    }
    w.add("llama.rope.freq_base", GgufMetaValue::f32(s.ropeBase));
    w.add("llama.attention.layer_norm_rms_epsilon", GgufMetaValue::f32(1e-5f));
    w.add("llama.vocab_size", GgufMetaValue::u32(uint32_t(s.nVocab)));
    for (const auto& kv : vocab->metadata()) {
        if (!kv.key.starts_with("tokenizer.")) continue;
        const GgufValue& v = kv.value;
        const bool perToken = v.type == GgufType::Array && v.count == have;
        if (pad == 0 || !perToken || (kv.key != "tokenizer.ggml.tokens" && kv.key != "tokenizer.ggml.scores" &&
                                      kv.key != "tokenizer.ggml.token_type")) {
            w.add(std::string(kv.key), GgufMetaValue::copyOf(v));
        } else if (kv.key == "tokenizer.ggml.tokens") {
            std::vector<std::string> pieces(v.strings.begin(), v.strings.end());
            for (uint64_t id = have; id < uint64_t(s.nVocab); ++id) pieces.push_back(fmt::format("[PAD{}]", id));
            w.add("tokenizer.ggml.tokens", GgufMetaValue::stringArray(std::span<const std::string>(pieces)));
        } else if (kv.key == "tokenizer.ggml.scores") {
            std::vector<float> scores;
            for (uint64_t i = 0; i < have; ++i) scores.push_back(float(v.numberAt(i)));
            scores.resize(size_t(s.nVocab), 0.0f);
            w.add("tokenizer.ggml.scores", GgufMetaValue::array(std::span<const float>(scores)));
        } else {
            std::vector<int32_t> types;
            for (uint64_t i = 0; i < have; ++i) types.push_back(int32_t(v.intAt(i)));
            types.resize(size_t(s.nVocab), 5);  // UNUSED
            w.add("tokenizer.ggml.token_type", GgufMetaValue::array(std::span<const int32_t>(types)));
        }
    }
    uint64_t index = 0;
    for (const auto& t : plan(o)) w.addTensor(t.name, t.ne, t.type, producer(t, mix(o.seed * 0x100000001B3ull + ++index)));
    return w.writeFile(out);
}

}  // namespace inferscope
