#include "model/arch_options.h"

#include <fmt/format.h>

#include "gguf/gguf_file.h"

namespace inferscope {

std::string_view supportedArchitectures() { return "llama, qwen2, qwen3, gemma2, gemma3 and phi3"; }

Result<ArchOptions> archOptionsFor(std::string_view arch) {
    ArchOptions o;
    if (arch == "llama") return o;
    if (arch == "qwen2") {
        o.rope = RopeMode::Neox;
        o.qkvBias = true;
        return o;
    }
    if (arch == "qwen3") {
        o.rope = RopeMode::Neox;
        o.qkNorm = true;
        return o;
    }
    if (arch == "gemma2" || arch == "gemma3") {
        const bool g3 = arch == "gemma3";
        o.rope = RopeMode::Neox;
        o.ffnActivation = FfnActivation::GeluTanh;
        o.embedScale = true;
        o.postNorms = true;
        o.slidingPattern = g3 ? SlidingPattern::FiveToOne : SlidingPattern::EvenLayers;
        o.softCapKeys = !g3;
        o.qkNorm = g3;
        o.localRopeBase10k = g3;
        return o;
    }
    if (arch == "phi3") {
        o.rope = RopeMode::Neox;
        o.fusedQkv = true;
        o.fusedGateUp = true;
        o.slidingPattern = SlidingPattern::All;
        return o;
    }
    return fail(ErrorKind::Unsupported, fmt::format("unsupported architecture '{}' (Inferscope runs {})", shownText(arch),
                                                    supportedArchitectures()));
}

}  // namespace inferscope
