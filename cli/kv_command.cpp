// inferscope-cli kv: bytes of KV cache for a model shape, context length and number of users.
#include <nlohmann/json.hpp>

#include <cstdio>
#include <memory>
#include <optional>
#include <string>

#include "commands.h"
#include "option_checks.h"
#include "kv_cache/kv_calculator.h"

namespace inferscope::cli {
namespace {

struct KvArgs {
    uint64_t layers = 0, heads = 0, headDim = 0, tokens = 0, users = 1;
    std::optional<uint64_t> kvHeads;  // default: heads (MHA)
    std::string dtype = "f16";
    bool json = false;
};

std::string human(uint64_t bytes) {
    const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    double v = double(bytes);
    int u = 0;
    while (v >= 1024 && u < 4) v /= 1024, ++u;
    char buf[64];
    std::snprintf(buf, sizeof buf, u ? "%.2f %s" : "%.0f %s", v, units[u]);
    return buf;
}

int run(const KvArgs& a) {
    const uint64_t kvHeads = a.kvHeads.value_or(a.heads);
    auto size = kvElementSize(a.dtype);
    if (!size) return reportError(size.error().message);
    KvShape shape{a.layers, a.heads, kvHeads, a.headDim, size->bytes};
    shape.blockElements = size->elements;
    auto f = computeKvFigures(shape, a.tokens, a.users);
    if (!f) return reportError(f.error().message);
    if (a.json) {
        nlohmann::ordered_json j = {{"layers", a.layers}, {"heads", a.heads}, {"kv_heads", kvHeads}, {"head_dim", a.headDim},
                            {"dtype", a.dtype}, {"bytes_per_element", size->elements == 1 ? nlohmann::json(size->bytes) : nlohmann::json(double(size->bytes) / double(size->elements))}, {"tokens", a.tokens}, {"users", a.users},
                            {"bytes_per_token", f->bytesPerToken}, {"total_bytes", f->totalBytes},
                            {"mha_bytes_per_token", f->mhaBytesPerToken}, {"mha_total_bytes", f->mhaTotalBytes},
                            {"mqa_bytes_per_token", f->mqaBytesPerToken}, {"mqa_total_bytes", f->mqaTotalBytes}};
        std::printf("%s\n", j.dump().c_str());
        return 0;
    }
    const std::string elementBytes = size->elements == 1 ? std::to_string(size->bytes)
                                                         : std::to_string(size->bytes) + "/" + std::to_string(size->elements);
    std::printf("bytes per token: 2 (K and V) x %llu layers x %llu KV heads x %llu head dim x %s bytes = %llu (%s)\n",
                (unsigned long long)a.layers, (unsigned long long)kvHeads, (unsigned long long)a.headDim, elementBytes.c_str(),
                (unsigned long long)f->bytesPerToken, human(f->bytesPerToken).c_str());
    std::printf("total: %llu tokens x %llu user%s = %llu bytes (%s)\n", (unsigned long long)a.tokens,
                (unsigned long long)a.users, a.users == 1 ? "" : "s", (unsigned long long)f->totalBytes, human(f->totalBytes).c_str());
    std::printf("as MHA (%llu KV heads): %llu bytes per token, %llu total (%s); GQA saves %.0f%%\n",
                (unsigned long long)a.heads, (unsigned long long)f->mhaBytesPerToken, (unsigned long long)f->mhaTotalBytes,
                human(f->mhaTotalBytes).c_str(), 100.0 * (1.0 - double(f->bytesPerToken) / double(f->mhaBytesPerToken)));
    std::printf("as MQA (1 KV head): %llu bytes per token, %llu total (%s)\n", (unsigned long long)f->mqaBytesPerToken,
                (unsigned long long)f->mqaTotalBytes, human(f->mqaTotalBytes).c_str());
    return 0;
}

}  // namespace

void addKvCommand(CLI::App& app, int& exitCode) {
    auto args = std::make_shared<KvArgs>();
    CLI::App* cmd = app.add_subcommand("kv", "KV-cache calculator: bytes per token and in total");
    cmd->add_option("--layers", args->layers, "transformer layers")->required()->check(kUnsigned);
    cmd->add_option("--heads", args->heads, "query heads")->required()->check(kUnsigned);
    cmd->add_option("--kv-heads", args->kvHeads, "key/value heads (default: --heads, i.e. MHA)")->check(kUnsigned);
    cmd->add_option("--head-dim", args->headDim, "dimension of one head")->required()->check(kUnsigned);
    cmd->add_option("--dtype", args->dtype, "cache element type: f32, f16, bf16, int8, q8_0 (34 bytes per 32), q4_0 (18 per 32)")->capture_default_str();
    cmd->add_option("--tokens", args->tokens, "context length in tokens")->required()->check(kUnsigned);
    cmd->add_option("--users", args->users, "concurrent sequences")->capture_default_str()->check(kUnsigned);
    cmd->add_flag("--json", args->json, "one JSON object");
    cmd->final_callback([args, &exitCode] { exitCode = run(*args); });
}

}  // namespace inferscope::cli
