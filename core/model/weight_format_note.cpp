#include "model/weight_format_note.h"

#include <fmt/format.h>

#include "gguf/ggml_types.h"

namespace inferscope {
namespace {

// What a block of each type we compute with holds, after its element count and byte size.
std::string_view blockContents(GgmlType t) {
    switch (t) {
        case GgmlType::Q4_0: return "4-bit values and one 16-bit scale; a weight is scale × (value − 8)";
        case GgmlType::Q4_1: return "4-bit values, a 16-bit scale and a 16-bit minimum; a weight is scale × value + minimum";
        case GgmlType::Q5_0: return "5-bit values and one 16-bit scale; a weight is scale × (value − 16)";
        case GgmlType::Q5_1: return "5-bit values, a 16-bit scale and a 16-bit minimum; a weight is scale × value + minimum";
        case GgmlType::Q8_0: return "8-bit values and one 16-bit scale; a weight is scale × value";
        case GgmlType::Q2_K: return "2-bit values, a 4-bit scale and minimum for each 16, and two 16-bit scales for those; a weight is scale × value − minimum";
        case GgmlType::Q3_K: return "3-bit values, a 6-bit scale for each 16 and one 16-bit scale for those; a weight is scale × (value − 4)";
        case GgmlType::Q4_K: return "4-bit values, a 6-bit scale and minimum for each 32, and two 16-bit scales for those; a weight is scale × value − minimum";
        case GgmlType::Q5_K: return "5-bit values, a 6-bit scale and minimum for each 32, and two 16-bit scales for those; a weight is scale × value − minimum";
        case GgmlType::Q6_K: return "6-bit values, an 8-bit scale for each 16 and one 16-bit scale for those; a weight is scale × (value − 32)";
        case GgmlType::IQ4_NL: return "4-bit indices into a fixed table of 16 unevenly spaced values and one 16-bit scale; a weight is scale × table[index]";
        case GgmlType::IQ4_XS: return "4-bit indices into a fixed table of 16 unevenly spaced values, a 6-bit scale for each 32 and one 16-bit scale for those";
        default: return {};
    }
}

std::optional<GgmlType> typeNamed(const std::string& name) {
    for (uint32_t id = 0; id < 64; ++id)
        if (auto info = ggmlTypeInfo(id); info && info->name == name) return GgmlType(id);
    return std::nullopt;
}

}  // namespace

std::string weightFormatNote(const ModelInfo& info) {
    // The block type most tensors use (Q4_K in a Q4_K_M file, whose few Q6_K tensors are the
    // ones quantization hurts most).
    std::optional<GgmlType> main;
    int most = 0;
    for (const auto& [name, count] : info.tensorTypes) {
        const auto t = typeNamed(name);
        if (!t || blockContents(*t).empty() || count <= most) continue;
        main = t;
        most = count;
    }
    if (!main) return {};
    const GgmlTypeInfo g = *ggmlTypeInfo(uint32_t(*main));
    const double typeBits = 8.0 * g.typeSize / g.blockSize;
    std::string note = fmt::format("{} keeps weights in blocks of {} stored in {} bytes ({:.2f} bits per weight): {}.", g.name,
                                   g.blockSize, g.typeSize, typeBits, blockContents(*main));
    if (info.bitsPerWeight > 0) {
        note += fmt::format(
            " This file averages {:.2f} bits per weight, {:.1f}× fewer bytes than 16-bit weights. Each generated token reads"
            " every weight once, so where memory bandwidth is the limit decode runs up to that much faster; prefill does"
            " many multiply-adds per weight read and gains less.",
            info.bitsPerWeight, 16.0 / info.bitsPerWeight);
    }
    return note;
}

}  // namespace inferscope
