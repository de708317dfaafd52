// inferscope-cli synth: write a random-weight GGUF of a named model shape, for benchmarks.
#include <chrono>
#include <fmt/format.h>
#include <cstdio>
#include <memory>

#include "commands.h"
#include "option_checks.h"
#include "engine/bundled_model.h"
#include "gguf/gguf_file.h"
#include "tools/synth_model.h"

namespace inferscope::cli {
namespace {

struct SynthArgs {
    std::string shape, dtype = "f32", out, vocab;
    uint64_t seed = 1;
};

// The Llama 2 vocabulary (32000 tokens) ships with the test data; the 512-token one with the
// bundled model; Llama 3's, Qwen's and Phi-3's are in ../shared/models/tokenizer beside a checkout.
std::filesystem::path defaultVocab(const SynthShape& shape) {
    if (shape.nVocab == 512) {
        if (auto bundled = findBundledModel()) return *bundled;
        return {};
    }
#ifdef INFERSCOPE_SOURCE_DIR
    const std::filesystem::path source(INFERSCOPE_SOURCE_DIR);
    if (shape.vocab == "llama-spm") return source / "tests/data/ggml-vocab-llama-spm.gguf";
    return source / ".." / "shared/models/tokenizer" / ("ggml-vocab-" + std::string(shape.vocab) + ".gguf");
#else
    return {};
#endif
}

int run(const SynthArgs& a) {
    auto shape = findSynthShape(a.shape);
    if (!shape) return reportError(shape.error().message);
    auto type = parseSynthType(a.dtype);
    if (!type) return reportError(type.error().message);
    SynthOptions o{*shape, *type, a.seed, a.vocab.empty() ? defaultVocab(*shape) : std::filesystem::path(a.vocab)};
    if (o.vocabFrom.empty()) return reportError("no vocabulary found: pass --vocab FILE.gguf");
    // Refused before "writing ..." so that a bad --out is one line on stderr like every error.
    const std::filesystem::path out(a.out);
    const std::filesystem::path dir = out.has_parent_path() ? out.parent_path() : std::filesystem::path(".");
    std::error_code ec;
    if (!std::filesystem::is_directory(dir, ec))
        return reportError("--out: " + dir.string() + " is not a directory");
    if (std::filesystem::is_directory(out, ec)) return reportError("--out: " + a.out + " is a directory");
    auto vocab = GgufFile::open(o.vocabFrom);
    if (!vocab) return reportError("--vocab: " + vocab.error().message);
    if (const GgufValue* tokens = vocab->find("tokenizer.ggml.tokens");
        !tokens || tokens->type != GgufType::Array || tokens->count > uint64_t(shape->nVocab))
        return reportError(fmt::format("--vocab: {} has no vocabulary of at most {} tokens (tokenizer.ggml.tokens)",
                                       o.vocabFrom.string(), shape->nVocab));
    const auto t0 = std::chrono::steady_clock::now();
    std::fprintf(stderr, "writing %s (%s, %s, %.1f MiB)\n", a.out.c_str(), std::string(shape->name).c_str(), a.dtype.c_str(),
                 double(synthModelBytes(o)) / (1 << 20));
    if (auto ok = writeSynthModel(o, a.out); !ok) return reportError(ok.error().message);
    std::fprintf(stderr, "done in %.1f s\n", std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    return 0;
}

}  // namespace

void addSynthCommand(CLI::App& app, int& exitCode) {
    auto a = std::make_shared<SynthArgs>();
    CLI::App* cmd = app.add_subcommand("synth", "Write a random-weight GGUF of a named model shape (for benchmarks)");
    cmd->add_option("--shape", a->shape,
                    "tinyllama-1.1b, llama-110m, stories260k, stories260k-wide, llama-3.2-1b, llama-3.2-3b, llama-3.1-8b, "
                    "qwen2.5-1.5b, qwen2.5-7b, gemma-3-4b or phi-3-mini")
        ->required();
    cmd->add_option("--dtype", a->dtype,
                    "f32, f16, bf16, q8_0, q4_0, q4_k_m, q5_k_m or q6_k (norms stay f32; the quantized ones with "
                    "llama-quantize's per-tensor types)")
        ->capture_default_str();
    cmd->add_option("--out,-o", a->out, "output GGUF file")->required()->check(kNotEmpty);
    cmd->add_option("--seed", a->seed, "weights are N(0, 0.02^2) from this seed")->capture_default_str()->check(kUnsigned);
    cmd->add_option("--vocab", a->vocab,
                    "GGUF whose tokenizer.* metadata to copy, padded with unused pieces to the shape's vocabulary "
                    "(default: the shape's own from ../shared/models/tokenizer, the Llama 2 vocabulary from tests/data, "
                    "or the bundled model's for stories260k)")
        ->check(kNotEmpty);
    cmd->final_callback([a, &exitCode] { exitCode = run(*a); });
}

}  // namespace inferscope::cli
