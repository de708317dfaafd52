// inferscope-cli info: what a GGUF model is, from its header (no weights are loaded).
#include <nlohmann/json.hpp>

#include <fmt/format.h>

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "engine_choices.h"
#include "commands.h"
#include "record/kv_type.h"
#include "common/kernel_set.h"
#include "option_checks.h"
#include "engine/bundled_model.h"
#include "gguf/gguf_file.h"
#include "model/model_info.h"

namespace inferscope::cli {
namespace {

// What KvCache allocates per token for a type: 2 × layers × KV heads × row bytes.
uint64_t kvBytesPerToken(const LlamaHParams& hp, KvType type) {
    return 2 * uint64_t(hp.nLayer) * uint64_t(hp.nHeadKv) * kvRowBytes(type, hp.headDim);
}

// The same for a block type, null when the head dimension is not whole blocks (the type is refused).
nlohmann::ordered_json blockKvBytesPerToken(const LlamaHParams& hp, KvType type) {
    if (hp.headDim % kKvBlockElements != 0) return nullptr;
    return kvBytesPerToken(hp, type);
}

// The architecture's departures from the plain Llama pass, in words ("q/k/v biases, NEOX RoPE").
std::string archFeatures(const LlamaHParams& hp) {
    const ArchOptions& o = hp.arch;
    std::vector<std::string> parts;
    if (o.fusedQkv) parts.push_back("fused QKV");
    if (o.qkvBias) parts.push_back("q/k/v biases");
    if (o.qkNorm) parts.push_back("per-head q/k RMSNorm");
    parts.push_back(o.rope == RopeMode::Neox ? "NEOX RoPE" : "normal RoPE");
    if (o.embedScale) parts.push_back("embedding x sqrt(n_embd)");
    if (o.postNorms) parts.push_back("post-attention/post-FFN norms");
    parts.push_back(o.ffnActivation == FfnActivation::GeluTanh ? "GELU(tanh)-gated FFN" : "SwiGLU FFN");
    if (o.fusedGateUp) parts.push_back("fused gate|up");
    std::string s;
    for (const auto& p : parts) s += (s.empty() ? "" : ", ") + p;
    return s;
}

// Which layers attend through the sliding window, e.g. "0-4, 6-7" (empty: none).
std::string slidingLayers(const LlamaHParams& hp) {
    std::string s;
    for (int32_t l = 0; l < hp.nLayer; ++l) {
        if (!hp.isSlidingLayer(l) || (l > 0 && hp.isSlidingLayer(l - 1))) continue;
        int32_t last = l;
        while (last + 1 < hp.nLayer && hp.isSlidingLayer(last + 1)) ++last;
        s += (s.empty() ? "" : ", ") + (last == l ? std::to_string(l) : std::to_string(l) + "-" + std::to_string(last));
    }
    return s;
}

int countSlidingLayers(const LlamaHParams& hp) {
    int n = 0;
    for (int32_t l = 0; l < hp.nLayer; ++l) n += hp.isSlidingLayer(l);
    return n;
}

struct InfoArgs {
    std::string model;
    bool json = false;
};

int run(const InfoArgs& a) {
    auto modelOrNone = modelOrBundled(a.model);
    if (!modelOrNone) return reportError(modelOrNone.error().message);
    const std::filesystem::path path = *modelOrNone;
    auto file = GgufFile::open(path);
    if (!file) return reportError(file.error().message);
    auto info = describeModel(*file, path.stem().string());
    if (!info) return reportError(info.error().message);
    const auto& hp = info->hparams;
    if (a.json) {
        nlohmann::ordered_json types = nlohmann::ordered_json::object();
        for (const auto& [name, count] : info->tensorTypes) types[name] = count;
        nlohmann::ordered_json j = {{"path", path.string()}, {"name", info->name}, {"architecture", hp.architecture},
                            {"gguf_version", info->ggufVersion}, {"file_bytes", info->fileBytes},
                            {"parameters", info->nParams}, {"weight_bytes", info->weightBytes}, {"tensor_types", types},
                            {"decode_bytes_per_token", info->decodeBytesPerToken}, {"bits_per_weight", info->bitsPerWeight},
                            {"layers", hp.nLayer}, {"embedding", hp.nEmbd}, {"heads", hp.nHead}, {"kv_heads", hp.nHeadKv},
                            {"head_dim", hp.headDim}, {"feed_forward", hp.nFf}, {"context_length", hp.nCtxTrain},
                            {"vocab_size", hp.nVocab}, {"rope_dimensions", hp.nRot}, {"rope_freq_base", hp.ropeFreqBase},
                            {"rms_eps", hp.rmsEps}, {"tied_output", info->tiedOutput},
                            {"tokenizer", info->tokenizerModel}, {"kv_bytes_per_token_f32", info->kvBytesPerTokenF32},
                            {"kv_bytes_per_token_f16", info->kvBytesPerTokenF16},
                            {"kv_bytes_per_token_q8_0", blockKvBytesPerToken(hp, KvType::Q8_0)},
                            {"kv_bytes_per_token_q4_0", blockKvBytesPerToken(hp, KvType::Q4_0)},
                            {"rope_mode", hp.arch.rope == RopeMode::Neox ? "neox" : "normal"},
                            {"rope_freq_scale", hp.ropeFreqScale},
                            {"sliding_window", hp.slidingWindow},
                            {"sliding_layers", countSlidingLayers(hp)},
                            {"rope_freq_base_sliding", hp.ropeFreqBaseSliding},
                            {"rope_freq_scale_sliding", hp.ropeFreqScaleSliding},
                            {"attn_logit_softcap", hp.attnSoftCap},
                            {"final_logit_softcap", hp.finalSoftCap},
                            {"features", archFeatures(hp)}, {"kernel_set", kernelSetName()}, {"kernel_extensions", kernelSetExtensions(activeKernelSet())}};
        std::printf("%s\n", j.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace).c_str());
        return 0;
    }
    const std::string types = tensorTypesSummary(*info);
    std::printf("model            %s (%s)\n", info->name.c_str(), path.string().c_str());
    std::printf("architecture     %s, GGUF v%u\n", hp.architecture.c_str(), info->ggufVersion);
    std::printf("parameters       %llu\n", (unsigned long long)info->nParams);
    std::printf("tensor types     %s\n", types.c_str());
    std::printf("weight bytes     %llu (file %llu), %.2f bits per weight\n", (unsigned long long)info->weightBytes,
                (unsigned long long)info->fileBytes, info->bitsPerWeight);
    std::printf("decode reads     %llu weight bytes per token (every matrix once, one embedding row)\n",
                (unsigned long long)info->decodeBytesPerToken);
    std::printf("layers           %d\n", hp.nLayer);
    std::printf("embedding        %d, feed-forward %d\n", hp.nEmbd, hp.nFf);
    std::printf("heads            %d query, %d KV (%s), head dim %d\n", hp.nHead, hp.nHeadKv,
                hp.nHeadKv == hp.nHead ? "MHA" : hp.nHeadKv == 1 ? "MQA" : ("GQA, " + std::to_string(hp.gqaGroup()) + " query heads per KV head").c_str(),
                hp.headDim);
    std::printf("context length   %d (trained)\n", hp.nCtxTrain);
    std::printf("vocab size       %d (%s tokenizer)\n", hp.nVocab, info->tokenizerModel.empty() ? "no" : info->tokenizerModel.c_str());
    std::printf("forward pass     %s\n", archFeatures(hp).c_str());
    std::printf("RoPE             %s, %d dims, base %g%s\n", hp.arch.rope == RopeMode::Neox ? "NEOX" : "normal", hp.nRot,
                hp.ropeFreqBase, hp.ropeFreqScale != 1.0 ? (", positions x " + fmt::format("{:g}", hp.ropeFreqScale)).c_str() : "");
    if (hp.slidingWindow > 0) {
        std::printf("sliding window   %d positions on %d of %d layers (%s)\n", hp.slidingWindow, countSlidingLayers(hp), hp.nLayer,
                    slidingLayers(hp).c_str());
        if (hp.ropeFreqBaseSliding != hp.ropeFreqBase || hp.ropeFreqScaleSliding != hp.ropeFreqScale)
            std::printf("                 its layers' RoPE: base %g, positions x %g\n", hp.ropeFreqBaseSliding, hp.ropeFreqScaleSliding);
    }
    if (hp.attnSoftCap > 0 || hp.finalSoftCap > 0)
        std::printf("soft-caps        attention %g, final logits %g (cap x tanh(x / cap))\n", hp.attnSoftCap, hp.finalSoftCap);
    std::printf("LM head          %s\n", info->tiedOutput ? "tied to the token embedding" : "separate output.weight");
    std::printf("KV bytes/token   %llu in F32, %llu in F16 (2 x %d layers x %d KV heads x %d head dim x bytes)\n",
                (unsigned long long)info->kvBytesPerTokenF32, (unsigned long long)info->kvBytesPerTokenF16, hp.nLayer,
                hp.nHeadKv, hp.headDim);
    if (hp.headDim % kKvBlockElements == 0)
        std::printf("                 %llu in Q8_0, %llu in Q4_0 (--kv q8_0|q4_0: ggml's blocks of 32)\n",
                    (unsigned long long)kvBytesPerToken(hp, KvType::Q8_0), (unsigned long long)kvBytesPerToken(hp, KvType::Q4_0));
    else
        std::printf("                 no Q8_0/Q4_0 cache: head dim %d is not a multiple of %d\n", hp.headDim, kKvBlockElements);
    if (hp.slidingWindow > 0)  // the truth about what is allocated (kv_cache.h keeps every position)
        std::printf("                 every layer caches every position; sliding-window layers read only the last %d\n",
                    hp.slidingWindow);
    const std::string extensions = kernelSetExtensions(activeKernelSet());
    std::printf("kernels          %s (%s%s; INFERSCOPE_KERNELS=portable|avx2|avx512 forces one)\n", kernelSetName(),
                kernelSetInstructions(activeKernelSet()), extensions.empty() ? "" : (", with " + extensions + " on this CPU").c_str());
    return 0;
}

}  // namespace

void addInfoCommand(CLI::App& app, int& exitCode) {
    auto args = std::make_shared<InfoArgs>();
    CLI::App* cmd = app.add_subcommand("info", "Describe a GGUF model (architecture, shapes, tensor types, KV bytes per token)");
    cmd->add_option("--model,-m", args->model, "GGUF file (default: the bundled stories260K)")->check(kNotEmpty);
    cmd->add_flag("--json", args->json, "one JSON object");
    cmd->final_callback([args, &exitCode] { exitCode = run(*args); });
}

}  // namespace inferscope::cli
