#pragma once
// The Model panel's teaching note on a quantized file: what one block of its main weight type
// holds, and why fewer bytes per weight make decode faster. Figures come from the type's geometry
// (ggml_types) and the file's own bits per weight.

#include <string>

#include "model/model_info.h"

namespace inferscope {

// Empty for files without block-quantized tensors (F32, F16, BF16).
std::string weightFormatNote(const ModelInfo& info);

}  // namespace inferscope
