#include "model/model_info.h"

#include <algorithm>
#include <vector>

namespace inferscope {

Result<ModelInfo> describeModel(const GgufFile& file, const std::string& fallbackName) {
    auto hp = readLlamaHParams(file);
    if (!hp) return std::unexpected(hp.error());
    ModelInfo info;
    info.hparams = *hp;
    info.ggufVersion = file.version();
    info.fileBytes = file.fileSize();
    auto name = file.getString("general.name");
    // general.name, unless it is missing or just the architecture (stories260K says "llama"):
    // then the file's name says more.
    info.name = name && *name && !(*name)->empty() && **name != hp->architecture ? std::string(**name) : fallbackName;
    auto tok = file.getString("tokenizer.ggml.model");
    if (tok && *tok) info.tokenizerModel = std::string(**tok);
    auto tmpl = file.getString("tokenizer.chat_template");
    if (tmpl && *tmpl) info.chatTemplate = std::string(**tmpl);
    for (const auto& t : file.tensors()) {
        info.nParams += t.nElements;
        info.weightBytes += t.nBytes;
        info.tensorTypes[std::string(ggmlTypeName(t.typeId))] += 1;
    }
    info.tiedOutput = file.findTensor("output.weight") == nullptr;
    for (const auto& t : file.tensors()) {
        if (t.name == "token_embd.weight") {
            info.decodeBytesPerToken += t.nBytes / std::max<uint64_t>(t.ne[1], 1) + (info.tiedOutput ? t.nBytes : 0);
        } else {
            info.decodeBytesPerToken += t.nBytes;
        }
    }
    info.bitsPerWeight = info.nParams ? 8.0 * double(info.weightBytes) / double(info.nParams) : 0.0;
    const uint64_t perElementCount = 2ull * uint64_t(hp->nLayer) * uint64_t(hp->nHeadKv) * uint64_t(hp->headDim);
    info.kvBytesPerTokenF32 = perElementCount * 4;
    info.kvBytesPerTokenF16 = perElementCount * 2;
    return info;
}

std::string tensorTypesSummary(const ModelInfo& info) {
    std::vector<std::pair<std::string, int>> types(info.tensorTypes.begin(), info.tensorTypes.end());
    std::stable_sort(types.begin(), types.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
    std::string s;
    for (const auto& [name, count] : types) s += (s.empty() ? "" : ", ") + name + " \u00d7" + std::to_string(count);
    return s;
}

}  // namespace inferscope
