#pragma once
// What every command that loads a model reads the same way: the model file (the bundled one when
// none is given) and --device, --compute, --kv (and --no-mmap's help) into EngineOptions, each bad value refused with the
// parser's message.

#include <filesystem>
#include <string>

#include "backend/compute_device.h"
#include "engine/bundled_model.h"
#include "engine/engine.h"
#include "kv_cache/kv_cache.h"
#include "model/llama_model.h"

namespace inferscope::cli {

// --no-mmap's help, for every command that loads a model (EngineOptions::privateWeights).
inline constexpr const char* kNoMmapHelp =
    "copy the weights into this process's own memory at load instead of reading them through the shared page "
    "cache (on some virtual machines page-cache memory reads slower)";

inline Result<std::filesystem::path> modelOrBundled(const std::string& model) {
    if (!model.empty()) return std::filesystem::path(model);
    if (auto bundled = findBundledModel()) return *bundled;
    return fail(ErrorKind::InvalidArgument, "no --model given and the bundled model stories260K.gguf was not found");
}

inline Result<void> applyEngineChoices(const std::string& device, const std::string& compute, const std::string& kv,
                                       EngineOptions& opt) {
    auto d = parseDeviceKind(device);
    if (!d) return std::unexpected(d.error());
    auto precision = parseComputePrecision(compute);
    if (!precision) return std::unexpected(precision.error());
    auto kvType = parseKvType(kv);
    if (!kvType) return std::unexpected(kvType.error());
    opt.device = *d;
    opt.precision = *precision;
    opt.kvType = *kvType;
    return {};
}

}  // namespace inferscope::cli
