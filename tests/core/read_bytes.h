#pragma once
// A whole file's bytes (the golden blocks and dequantized goldens of tests/data/quant); empty when
// the file cannot be read, which the tests' size checks then report.
#include <cstdint>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace inferscope::testing_files {

inline std::vector<uint8_t> readBytes(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

}  // namespace inferscope::testing_files
