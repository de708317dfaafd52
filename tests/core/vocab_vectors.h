#pragma once
// llama.cpp's tokenizer test vectors (test-tokenizer-0): `<vocab>.gguf.inp` holds strings each
// followed by "\n__ggml_vocab_test__\n", `<vocab>.gguf.out` one line of expected ids per string.
#include <gtest/gtest.h>

#include <cstdint>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

namespace inferscope::testing_vocab {

inline std::string readFile(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    EXPECT_TRUE(in) << path;
    return {std::istreambuf_iterator<char>(in), {}};
}

struct Vector {
    std::string text;
    std::vector<int32_t> ids;
};

// The vectors of the vocabulary file at `ggufPath` (its .inp and .out beside it).
inline std::vector<Vector> readVectors(const std::string& ggufPath) {
    const std::string inp = readFile(ggufPath + ".inp");
    const std::string sep = "\n__ggml_vocab_test__\n";
    std::vector<Vector> v;
    for (size_t pos = 0; pos < inp.size();) {
        const size_t end = inp.find(sep, pos);
        if (end == std::string::npos) break;
        v.push_back({inp.substr(pos, end - pos), {}});
        pos = end + sep.size();
    }
    std::istringstream out(readFile(ggufPath + ".out"));
    std::string line;
    for (size_t k = 0; std::getline(out, line); ++k) {
        if (k >= v.size()) { ADD_FAILURE() << "more .out lines than .inp strings"; break; }
        std::istringstream ids(line);
        for (int32_t id; ids >> id;) v[k].ids.push_back(id);
    }
    return v;
}

}  // namespace inferscope::testing_vocab
