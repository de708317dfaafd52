#include "model/model_info.h"

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
    const uint64_t perElementCount = 2ull * uint64_t(hp->nLayer) * uint64_t(hp->nHeadKv) * uint64_t(hp->headDim);
    info.kvBytesPerTokenF32 = perElementCount * 4;
    info.kvBytesPerTokenF16 = perElementCount * 2;
    return info;
}

}  // namespace inferscope
