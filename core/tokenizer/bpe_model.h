#pragma once
// Byte-level BPE (tokenizer.ggml.model = "gpt2": Llama 3, Qwen 2/2.5/3, GPT-2) as llama.cpp
// tokenizes a text fragment (llm_tokenizer_bpe_session): pre-tokenize, map each piece's bytes to
// the GPT-2 alphabet, merge adjacent symbols by the rank of their pair in tokenizer.ggml.merges
// (lowest rank first, the leftmost pair on ties), look every final symbol up in the vocabulary.
// Immutable once built; encode() may run on many threads at once.

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "common/error.h"
#include "tokenizer/pre_tokenizer.h"
#include "tokenizer/vocab.h"

namespace inferscope {

class BpeModel {
public:
    // vocab.merges must hold the merges ("left right"), vocab.bpe the pre-tokenizer choice.
    static Result<BpeModel> create(const Vocab& vocab);

    // Appends the ids of one fragment (text between special tokens; any bytes: invalid UTF-8
    // becomes U+FFFD first, as in llama.cpp).
    void encode(std::string_view fragment, std::vector<int32_t>& out) const;

private:
    BpeModel(PreTokenizer pre, bool ignoreMerges) : pre_(std::move(pre)), ignoreMerges_(ignoreMerges) {}
    // Rank of merging `left` with `right`, or -1 when they do not merge.
    int32_t rankOf(std::string_view left, std::string_view right) const;
    int32_t idOf(std::string_view text) const;   // -1 when no token has this text
    void encodePiece(const std::string& symbols, std::vector<int32_t>& out) const;

    PreTokenizer pre_;
    bool ignoreMerges_;
    std::unordered_map<std::string, int32_t> ids_;    // token text (GPT-2 alphabet) -> id
    std::unordered_map<std::string, int32_t> ranks_;  // pairKey(left, right) -> merge rank
};

}  // namespace inferscope
