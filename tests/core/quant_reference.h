#pragma once
// The quantized golden set (../shared/models/quant, ../shared/reference/quant): every file's name
// and its llama.cpp references (`-greedy-N`: llama.cpp's own computation; `-exact-greedy-N`: every
// matrix dequantized exactly and run in F32). Reference layout: see model_test_helpers.h.
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "model_test_helpers.h"

namespace inferscope::testing_model {

// The 22 quantized files, without ".gguf".
inline const std::vector<std::string> kQuantFiles = {
    "stories260K-wide-IQ4_NL-pure", "stories260K-wide-IQ4_NL", "stories260K-wide-IQ4_XS-pure", "stories260K-wide-IQ4_XS",
    "stories260K-wide-Q2_K-pure",   "stories260K-wide-Q2_K",   "stories260K-wide-Q3_K-pure",   "stories260K-wide-Q3_K_M",
    "stories260K-wide-Q4_0-pure",   "stories260K-wide-Q4_0",   "stories260K-wide-Q4_1-pure",   "stories260K-wide-Q4_1",
    "stories260K-wide-Q4_K-pure",   "stories260K-wide-Q4_K_M", "stories260K-wide-Q5_0-pure",   "stories260K-wide-Q5_0",
    "stories260K-wide-Q5_1-pure",   "stories260K-wide-Q5_1",   "stories260K-wide-Q5_K-pure",   "stories260K-wide-Q5_K_M",
    "stories260K-wide-Q6_K",        "stories260K-wide-Q8_0",
};

// Gtest parameter names cannot hold '-'.
inline std::string paramName(std::string s) {
    for (char& c : s)
        if (c == '-') c = '_';
    return s;
}

}  // namespace inferscope::testing_model
