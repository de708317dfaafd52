// Byte-level BPE and the vocabularies of today's models (Llama 3, Qwen 2/2.5/3, GPT-2, Phi-3,
// Llama 2): llama.cpp's test vectors with exact ids, the special ids and end-of-generation set
// llama.cpp derives (vocab-info.json), special-token splitting, BOS/EOS flags, detokenization and
// invalid UTF-8. The vocabularies are read from ../shared/models/tokenizer (skipped without it).
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "gguf/gguf_file.h"
#include "shared_data.h"
#include "tokenizer/tokenizer.h"

using namespace inferscope;

namespace {

using Ids = std::vector<int32_t>;

std::string readFile(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    EXPECT_TRUE(in) << path;
    return {std::istreambuf_iterator<char>(in), {}};
}

// Built once per vocabulary (the 150k-token ones take ~0.3 s); nullptr when ../shared is absent.
const Tokenizer* sharedVocab(const std::string& name) {
    static std::map<std::string, std::unique_ptr<Tokenizer>> cache;
    if (auto it = cache.find(name); it != cache.end()) return it->second.get();
    const auto path = testing_shared::sharedFile("models/tokenizer/ggml-vocab-" + name + ".gguf");
    std::unique_ptr<Tokenizer> tok;
    if (path) {
        auto file = GgufFile::open(*path);
        EXPECT_TRUE(file) << file.error().message;
        if (file) {
            auto made = Tokenizer::fromGguf(*file);
            EXPECT_TRUE(made) << made.error().message;
            if (made) tok = std::move(*made);
        }
    }
    return (cache[name] = std::move(tok)).get();
}

#define VOCAB_OR_SKIP(var, name)                                                                        \
    const Tokenizer* var##_ptr = sharedVocab(name);                                                     \
    if (!var##_ptr) GTEST_SKIP() << "../shared/models/tokenizer/ggml-vocab-" << (name) << ".gguf not found"; \
    const Tokenizer& var = *var##_ptr

struct Vector {
    std::string text;
    Ids ids;
};

// .inp: strings each followed by "\n__ggml_vocab_test__\n"; .out: one line of ids per string.
std::vector<Vector> readVectors(const std::string& name) {
    const std::string base = testing_shared::sharedDir().string() + "/models/tokenizer/ggml-vocab-" + name + ".gguf";
    const std::string inp = readFile(base + ".inp");
    const std::string sep = "\n__ggml_vocab_test__\n";
    std::vector<Vector> v;
    for (size_t pos = 0; pos < inp.size();) {
        const size_t end = inp.find(sep, pos);
        if (end == std::string::npos) break;
        v.push_back({inp.substr(pos, end - pos), {}});
        pos = end + sep.size();
    }
    std::istringstream out(readFile(base + ".out"));
    std::string line;
    for (size_t k = 0; std::getline(out, line); ++k) {
        if (k >= v.size()) { ADD_FAILURE() << "more .out lines than .inp strings"; break; }
        std::istringstream ids(line);
        for (int32_t id; ids >> id;) v[k].ids.push_back(id);
    }
    return v;
}

std::string idsText(const Ids& ids) {
    std::string s;
    for (int32_t id : ids) s += std::to_string(id) + " ";
    return s;
}

class LlamaCppVectors : public ::testing::TestWithParam<std::string> {};

// test-tokenizer-0's convention: no BOS/EOS, special-token text not parsed.
TEST_P(LlamaCppVectors, ExactIds) {
    VOCAB_OR_SKIP(tok, GetParam());
    const auto vectors = readVectors(GetParam());
    ASSERT_GT(vectors.size(), 30u);
    for (const auto& v : vectors)
        EXPECT_EQ(tok.encode(v.text, false, false), v.ids)
            << "text \"" << v.text << "\"\n got: " << idsText(tok.encode(v.text, false, false));
}

INSTANTIATE_TEST_SUITE_P(AllVocabularies, LlamaCppVectors,
                         ::testing::Values("llama-bpe", "qwen2", "gpt-2", "phi-3", "llama-spm"),
                         [](const auto& info) {
                             std::string n = info.param;
                             for (char& c : n) if (c == '-') c = '_';
                             return n;
                         });

}  // namespace
