// inferscope-cli info: what a GGUF model is, from its header (no weights are loaded).
#include <nlohmann/json.hpp>

#include <cstdio>
#include <memory>

#include "commands.h"
#include "option_checks.h"
#include "engine/bundled_model.h"
#include "gguf/gguf_file.h"
#include "model/model_info.h"

namespace inferscope::cli {
namespace {

struct InfoArgs {
    std::string model;
    bool json = false;
};

int run(const InfoArgs& a) {
    std::filesystem::path path = a.model;
    if (path.empty()) {
        auto bundled = findBundledModel();
        if (!bundled) return reportError("no --model given and the bundled model stories260K.gguf was not found");
        path = *bundled;
    }
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
                            {"kv_bytes_per_token_f16", info->kvBytesPerTokenF16}};
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
    std::printf("RoPE             %d dims, base %g\n", hp.nRot, hp.ropeFreqBase);
    std::printf("LM head          %s\n", info->tiedOutput ? "tied to the token embedding" : "separate output.weight");
    std::printf("KV bytes/token   %llu in F32, %llu in F16 (2 x %d layers x %d KV heads x %d head dim x bytes)\n",
                (unsigned long long)info->kvBytesPerTokenF32, (unsigned long long)info->kvBytesPerTokenF16, hp.nLayer,
                hp.nHeadKv, hp.headDim);
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
