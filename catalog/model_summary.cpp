#include "catalog/model_summary.h"

#include <fmt/format.h>

#include <map>
#include <thread>

#include "model/llama_hparams.h"

namespace inferscope::catalog {

std::string_view fileTypeName(uint64_t fileType) {
    // llama.cpp include/llama.h (enum llama_ftype); the names llama-quantize takes and files carry.
    switch (fileType) {
        case 0: return "F32";
        case 1: return "F16";
        case 2: return "Q4_0";
        case 3: return "Q4_1";
        case 7: return "Q8_0";
        case 8: return "Q5_0";
        case 9: return "Q5_1";
        case 10: return "Q2_K";
        case 11: return "Q3_K_S";
        case 12: return "Q3_K_M";
        case 13: return "Q3_K_L";
        case 14: return "Q4_K_S";
        case 15: return "Q4_K_M";
        case 16: return "Q5_K_S";
        case 17: return "Q5_K_M";
        case 18: return "Q6_K";
        case 19: return "IQ2_XXS";
        case 20: return "IQ2_XS";
        case 21: return "Q2_K_S";
        case 22: return "IQ3_XS";
        case 23: return "IQ3_XXS";
        case 24: return "IQ1_S";
        case 25: return "IQ4_NL";
        case 26: return "IQ3_S";
        case 27: return "IQ3_M";
        case 28: return "IQ2_S";
        case 29: return "IQ2_M";
        case 30: return "IQ4_XS";
        case 31: return "IQ1_M";
        case 32: return "BF16";
        case 36: return "TQ1_0";
        case 37: return "TQ2_0";
        default: return "";
    }
}

Result<ModelSummary> summarizeModel(const GgufFile& file) {
    ModelSummary s;
    s.fileBytes = file.fileSize();
    auto arch = file.getString("general.architecture");
    if (!arch) return std::unexpected(arch.error());
    if (*arch) s.architecture = shownText(**arch, 64);
    auto name = file.getString("general.name");
    if (name && *name) s.generalName = shownText(**name, 200);
    if (!s.architecture.empty()) {
        auto ctx = file.getUint(s.architecture + ".context_length");
        if (ctx && *ctx && **ctx <= uint64_t(INT32_MAX)) s.trainedContext = int32_t(**ctx);
    }
    std::map<uint32_t, uint64_t> matrixBytes;  // 2-D weights' bytes by type
    for (const auto& t : file.tensors()) {
        s.parameters += t.nElements;
        if (t.nDims == 2) matrixBytes[t.typeId] += t.nBytes;
    }
    if (auto ft = file.getUint("general.file_type"); ft && *ft) s.quantization = std::string(fileTypeName(**ft));
    if (s.quantization.empty() && !matrixBytes.empty()) {
        auto most = matrixBytes.begin();
        for (auto it = matrixBytes.begin(); it != matrixBytes.end(); ++it)
            if (it->second > most->second) most = it;
        s.quantization = std::string(ggmlTypeName(most->first));
    }
    auto hp = readLlamaHParams(file);
    if (!hp) {
        s.refusal = hp.error().message;
        return s;
    }
    for (const auto& t : file.tensors()) {
        if (t.nDims == 2 && !isSupportedWeightType(t.type())) {
            s.refusal = fmt::format("tensor type {} is not supported ({})", ggmlTypeName(t.typeId), shownText(t.name));
            return s;
        }
    }
    s.runnable = true;
    s.footprint = loadFootprint(file, *hp, ComputePrecision::Auto);
    return s;
}

std::optional<FitAssessment> fitOf(const ModelSummary& summary, const FitQuestion& question, const MemoryFigures& have) {
    if (!summary.runnable || !summary.footprint) return std::nullopt;
    const LoadFootprint& fp = *summary.footprint;
    int32_t context = question.context > 0 ? question.context : fp.nCtxTrain;
    if (context > fp.nCtxTrain) context = fp.nCtxTrain;  // as the loader caps it
    const int threads = question.threads > 0 ? question.threads : int(std::max(1u, std::thread::hardware_concurrency()));
    LoadShape shape{question.precision, context, 512, question.kvType, threads};
    if (question.precision == ComputePrecision::Auto) return assessFit(fp, shape, have);
    // Another precision converts other weights: only the footprint's Auto figures are kept, so
    // such a question needs the file (the loader asks it with the file in hand).
    return std::nullopt;
}

}  // namespace inferscope::catalog
