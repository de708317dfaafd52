#include "model/llama_hparams.h"

#include <cmath>
#include <fmt/format.h>

namespace inferscope {
namespace {

Error bad(std::string msg) { return Error{ErrorKind::BadFile, std::move(msg)}; }

// Reads an integer key into out, within [lo, hi]; absent and required -> error.
Result<void> readInt(const GgufFile& f, const std::string& key, int32_t& out, bool required, int64_t lo, int64_t hi) {
    auto v = f.getUint(key);
    if (!v) return std::unexpected(v.error());
    if (!*v) {
        if (required) return std::unexpected(bad(fmt::format("missing metadata key {}", key)));
        return {};
    }
    const uint64_t x = **v;
    if (x < uint64_t(lo) || x > uint64_t(hi))
        return std::unexpected(bad(fmt::format("metadata {} = {} is out of range ({} to {})", key, x, lo, hi)));
    out = int32_t(x);
    return {};
}

}  // namespace

Result<LlamaHParams> readLlamaHParams(const GgufFile& f) {
    LlamaHParams hp;
    auto arch = f.getString("general.architecture");
    if (!arch) return std::unexpected(arch.error());
    if (!*arch) return std::unexpected(bad("missing metadata key general.architecture"));
    hp.architecture = std::string(**arch);
    auto options = archOptionsFor(hp.architecture);
    if (!options) return std::unexpected(options.error());
    hp.arch = *options;
    const std::string a = hp.architecture + ".";

    if (auto r = readInt(f, a + "context_length", hp.nCtxTrain, true, 1, 1 << 24); !r) return std::unexpected(r.error());
    if (auto r = readInt(f, a + "embedding_length", hp.nEmbd, true, 1, 1 << 16); !r) return std::unexpected(r.error());
    if (auto r = readInt(f, a + "block_count", hp.nLayer, true, 1, 1024); !r) return std::unexpected(r.error());
    if (auto r = readInt(f, a + "feed_forward_length", hp.nFf, true, 1, 1 << 20); !r) return std::unexpected(r.error());
    if (auto r = readInt(f, a + "attention.head_count", hp.nHead, true, 1, 1024); !r) return std::unexpected(r.error());
    hp.nHeadKv = hp.nHead;
    if (auto r = readInt(f, a + "attention.head_count_kv", hp.nHeadKv, false, 1, 1024); !r) return std::unexpected(r.error());

    if (hp.nHead % hp.nHeadKv != 0)
        return std::unexpected(bad(fmt::format("head count {} is not a multiple of the KV head count {}", hp.nHead, hp.nHeadKv)));
    // head_dim: key_length when given (Qwen 3, Gemma: heads × head_dim ≠ n_embd), else n_embd / n_head.
    int32_t keyLength = 0, valueLength = 0;
    if (auto r = readInt(f, a + "attention.key_length", keyLength, false, 1, 1 << 12); !r) return std::unexpected(r.error());
    if (auto r = readInt(f, a + "attention.value_length", valueLength, false, 1, 1 << 12); !r) return std::unexpected(r.error());
    if (keyLength == 0 && hp.nEmbd % hp.nHead != 0)
        return std::unexpected(bad(fmt::format("embedding length {} is not a multiple of the head count {}", hp.nEmbd, hp.nHead)));
    hp.headDim = keyLength ? keyLength : hp.nEmbd / hp.nHead;
    if (valueLength == 0) valueLength = hp.headDim;
    if (valueLength != hp.headDim)  // one head_dim serves K and V in the cache and the kernels
        return fail(ErrorKind::Unsupported, fmt::format("{}attention.value_length = {} differs from the key length {}", a,
                                                        valueLength, hp.headDim));
    if (int64_t(hp.nHead) * hp.headDim > (1 << 20))
        return std::unexpected(bad(fmt::format("head count {} × head dim {} is too large", hp.nHead, hp.headDim)));
    hp.nRot = hp.headDim;
    if (auto r = readInt(f, a + "rope.dimension_count", hp.nRot, false, 2, hp.headDim); !r) return std::unexpected(r.error());
    if (hp.nRot % 2 != 0) return std::unexpected(bad(fmt::format("rope dimension count {} is odd", hp.nRot)));

    auto base = f.getFloat(a + "rope.freq_base");
    if (!base) return std::unexpected(base.error());
    if (*base) {
        if (!(**base > 1.0 && **base < 1e12)) return std::unexpected(bad(fmt::format("rope.freq_base {} is out of range", **base)));
        hp.ropeFreqBase = **base;
    }
    auto scalingType = f.getString(a + "rope.scaling.type");
    if (!scalingType) return std::unexpected(scalingType.error());
    if (*scalingType && **scalingType != "none" && **scalingType != "linear")
        return fail(ErrorKind::Unsupported, fmt::format("unsupported RoPE scaling '{}' (none and linear are supported)", shownText(**scalingType)));
    auto factor = f.getFloat(a + "rope.scaling.factor");
    if (!factor) return std::unexpected(factor.error());
    if (*factor && *scalingType && **scalingType == "linear") {
        if (!(**factor >= 1.0 && **factor <= 1024.0)) return std::unexpected(bad(fmt::format("rope.scaling.factor {} is out of range", **factor)));
        hp.ropeFreqScale = 1.0 / **factor;
    }
    auto eps = f.getFloat(a + "attention.layer_norm_rms_epsilon");
    if (!eps) return std::unexpected(eps.error());
    if (!*eps) return std::unexpected(bad(fmt::format("missing metadata key {}attention.layer_norm_rms_epsilon", a)));
    if (!(**eps > 0.0 && **eps < 1.0)) return std::unexpected(bad(fmt::format("RMS norm epsilon {} is out of range", **eps)));
    hp.rmsEps = float(**eps);

    // Sliding layers' RoPE: gemma3's local layers keep base 10000 and no scaling.
    hp.ropeFreqBaseSliding = hp.arch.localRopeBase10k ? 10000.0 : hp.ropeFreqBase;
    hp.ropeFreqScaleSliding = hp.arch.localRopeBase10k ? 1.0 : hp.ropeFreqScale;
    if (hp.arch.slidingPattern != SlidingPattern::None) {
        // Gemma 2 files from before the key was written mean Gemma 2's 4096 (as llama.cpp assumes);
        // without the key any other architecture attends globally.
        hp.slidingWindow = hp.architecture == "gemma2" ? 4096 : 0;
        if (auto r = readInt(f, a + "attention.sliding_window", hp.slidingWindow, false, 1, 1 << 24); !r)
            return std::unexpected(r.error());
    }
    // Gemma 2 27B (46 layers) and Gemma 3 27B (62 layers) scale queries by 1/√(n_embd / n_head)
    // (their query_pre_attn_scalar), not 1/√head_dim; llama.cpp tells them by the layer count too.
    if ((hp.architecture == "gemma2" && hp.nLayer == 46) || (hp.architecture == "gemma3" && hp.nLayer == 62))
        hp.attentionScale = 1.0f / std::sqrt(float(hp.nEmbd / hp.nHead));
    if (hp.arch.softCapKeys) {
        // Gemma 2 always soft-caps; the keys carry the values (50 and 30 in every released Gemma 2).
        hp.attnSoftCap = 50.0f;
        hp.finalSoftCap = 30.0f;
        for (auto [key, out] : {std::pair{"attn_logit_softcapping", &hp.attnSoftCap}, std::pair{"final_logit_softcapping", &hp.finalSoftCap}}) {
            auto cap = f.getFloat(a + key);
            if (!cap) return std::unexpected(cap.error());
            if (!*cap) continue;
            if (!(**cap > 0.0 && **cap < 1e6)) return std::unexpected(bad(fmt::format("{}{} {} is out of range", a, key, **cap)));
            *out = float(**cap);
        }
    }

    const GgufTensorInfo* embd = f.findTensor("token_embd.weight");
    if (!embd) return std::unexpected(bad("missing tensor token_embd.weight"));
    if (embd->nDims != 2 || embd->ne[0] != uint64_t(hp.nEmbd) || embd->ne[1] > (1u << 22))
        return std::unexpected(bad(fmt::format("tensor token_embd.weight has shape {}, expected [{}, n_vocab]", embd->shapeString(), hp.nEmbd)));
    hp.nVocab = int32_t(embd->ne[1]);
    return hp;
}

}  // namespace inferscope
