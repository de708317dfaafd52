#include "tools/quant_mix.h"

namespace inferscope {
namespace {

uint64_t blockOf(GgmlType t) { return ggmlTypeInfo(uint32_t(t))->blockSize; }

// llama-quantize's "use_more_bits": the first and last eighth of the layers and every third between.
bool moreBitsLayer(int i, int n) { return i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2; }

}  // namespace

GgmlType quantMixType(GgmlType base, MatrixRole role, int layer, int nLayer, uint64_t rowLength) {
    switch (base) {
        case GgmlType::F32: case GgmlType::F16: case GgmlType::BF16: return base;
        case GgmlType::Q8_0: return rowLength % blockOf(base) == 0 ? base : GgmlType::F32;
        default: break;
    }
    const bool mediumMix = base == GgmlType::Q4_K || base == GgmlType::Q5_K;
    GgmlType t = base;
    if (role == MatrixRole::Output)
        t = rowLength % blockOf(base) != 0 ? GgmlType::Q8_0 : GgmlType::Q6_K;
    else if ((role == MatrixRole::AttnV || role == MatrixRole::FfnDown) && mediumMix && moreBitsLayer(layer, nLayer))
        t = GgmlType::Q6_K;
    if (rowLength % blockOf(t) == 0) return t;
    switch (t) {
        case GgmlType::Q4_K: t = GgmlType::Q5_0; break;
        case GgmlType::Q5_K: t = GgmlType::Q5_1; break;
        case GgmlType::Q6_K: t = GgmlType::Q8_0; break;
        default: return GgmlType::F16;  // Q4_0, Q8_0: llama-quantize has no fallback and refuses
    }
    return rowLength % blockOf(t) == 0 ? t : GgmlType::F16;
}

uint32_t quantMixFileType(GgmlType base) {
    switch (base) {
        case GgmlType::F32: return 0;
        case GgmlType::F16: return 1;
        case GgmlType::Q4_0: return 2;
        case GgmlType::Q8_0: return 7;
        case GgmlType::Q4_K: return 15;
        case GgmlType::Q5_K: return 17;
        case GgmlType::Q6_K: return 18;
        default: return 32;  // BF16
    }
}

}  // namespace inferscope
