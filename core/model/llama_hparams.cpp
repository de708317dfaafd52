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
    if (hp.architecture != "llama")
        return fail(ErrorKind::Unsupported,
                    fmt::format("unsupported architecture '{}' (Inferscope runs llama-architecture models)", shownText(hp.architecture)));
    const std::string a = hp.architecture + ".";

    if (auto r = readInt(f, a + "context_length", hp.nCtxTrain, true, 1, 1 << 24); !r) return std::unexpected(r.error());
    if (auto r = readInt(f, a + "embedding_length", hp.nEmbd, true, 1, 1 << 16); !r) return std::unexpected(r.error());
    if (auto r = readInt(f, a + "block_count", hp.nLayer, true, 1, 1024); !r) return std::unexpected(r.error());
    if (auto r = readInt(f, a + "feed_forward_length", hp.nFf, true, 1, 1 << 20); !r) return std::unexpected(r.error());
    if (auto r = readInt(f, a + "attention.head_count", hp.nHead, true, 1, 1024); !r) return std::unexpected(r.error());
    hp.nHeadKv = hp.nHead;
    if (auto r = readInt(f, a + "attention.head_count_kv", hp.nHeadKv, false, 1, 1024); !r) return std::unexpected(r.error());

    if (hp.nEmbd % hp.nHead != 0)
        return std::unexpected(bad(fmt::format("embedding length {} is not a multiple of the head count {}", hp.nEmbd, hp.nHead)));
    if (hp.nHead % hp.nHeadKv != 0)
        return std::unexpected(bad(fmt::format("head count {} is not a multiple of the KV head count {}", hp.nHead, hp.nHeadKv)));
    hp.headDim = hp.nEmbd / hp.nHead;
    for (const char* key : {"attention.key_length", "attention.value_length"}) {
        int32_t len = hp.headDim;
        if (auto r = readInt(f, a + key, len, false, 1, 1 << 16); !r) return std::unexpected(r.error());
        if (len != hp.headDim)
            return fail(ErrorKind::Unsupported, fmt::format("{}{} = {} differs from embedding / heads = {}", a, key, len, hp.headDim));
    }
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

    const GgufTensorInfo* embd = f.findTensor("token_embd.weight");
    if (!embd) return std::unexpected(bad("missing tensor token_embd.weight"));
    if (embd->nDims != 2 || embd->ne[0] != uint64_t(hp.nEmbd) || embd->ne[1] > (1u << 22))
        return std::unexpected(bad(fmt::format("tensor token_embd.weight has shape {}, expected [{}, n_vocab]", embd->shapeString(), hp.nEmbd)));
    hp.nVocab = int32_t(embd->ne[1]);
    return hp;
}

}  // namespace inferscope
