#pragma once
// What a GGUF header says about a model, as the model library lists it: read from the header alone
// (a local file's mapping, or a remote file's first megabytes), every field validated by the
// reader first. Plain values: made on any thread, kept in the header cache.

#include <cstdint>
#include <optional>
#include <string>

#include "common/error.h"
#include "engine/load_memory.h"
#include "gguf/gguf_file.h"

namespace inferscope::catalog {

struct ModelSummary {
    std::string architecture;    // general.architecture ("llama", "qwen2", ...; "" when absent)
    std::string generalName;     // general.name ("" when absent)
    uint64_t parameters = 0;     // elements of all tensors
    // llama-quantize's name of general.file_type ("Q4_K_M", "F16", ...), else the type holding
    // most of the 2-D weights' bytes ("Q4_K"), as `inferscope-cli info` lists the types.
    std::string quantization;
    int32_t trainedContext = 0;  // {arch}.context_length (0 when absent)
    uint64_t fileBytes = 0;
    // Whether the engine would load it; why not otherwise (an architecture or tensor type we do
    // not run, hyperparameters that do not add up).
    bool runnable = false;
    std::string refusal;
    std::optional<LoadFootprint> footprint;  // for runnable models, ComputePrecision::Auto
};

Result<ModelSummary> summarizeModel(const GgufFile& file);

// llama.cpp's file types (llama.h, enum llama_ftype) by their llama-quantize names; "" unknown.
std::string_view fileTypeName(uint64_t fileType);

// What a fit question asks: the context (0 = the model's trained length), KV type, precision and
// threads of the load it stands for (the CLI's defaults: those of `generate`).
struct FitQuestion {
    int32_t context = 0;
    KvType kvType = KvType::F32;
    ComputePrecision precision = ComputePrecision::Auto;
    int threads = 0;  // 0: one per core
};
// assessFit (engine/load_memory.h, the loader's own check) for a summarized model against `have`.
// Nothing for a model the engine would not load.
std::optional<FitAssessment> fitOf(const ModelSummary& summary, const FitQuestion& question, const MemoryFigures& have);

}  // namespace inferscope::catalog
