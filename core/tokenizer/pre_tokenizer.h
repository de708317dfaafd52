#pragma once
// Byte-level BPE's pre-tokenizer: the regexes llama.cpp chooses by tokenizer.ggml.pre, run with
// PCRE2 (UTF + UCP, so \p{L} and \p{N} are Unicode's letters and numbers). Text is split into
// pieces, each of which BPE then merges on its own; text between matches is a piece too, so no
// byte is ever dropped. Immutable once built, split() may run on many threads at once.

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.h"

namespace inferscope {

enum class PreTokenizerKind {
    Llama3,   // contractions (any case), letters, digits in threes, punctuation runs, newlines
    Qwen2,    // Llama 3's, but digits one by one
    Gpt2,     // GPT-2's: lowercase contractions, " ?\p{N}+"
    Default,  // llama.cpp's fallback for a BPE vocabulary without (or with "default") pre-tokenizer
};

// What a tokenizer.ggml.pre name means in llama.cpp (src/llama-vocab.cpp, llama_vocab::impl::load).
struct PreTokenizerSpec {
    PreTokenizerKind kind;
    bool ignoreMerges = false;       // a piece that is a whole token is taken as is (Llama 3)
    std::optional<bool> addBos;      // the default when tokenizer.ggml.add_bos_token is absent
    bool cleanSpaces = true;         // detokenize removes " ." " ," " 's" ... (clean_up_tokenization_spaces)
};

// nullopt for a name we do not implement (llama.cpp knows ~40); "" and "default" give Default.
std::optional<PreTokenizerSpec> findPreTokenizer(std::string_view name);
std::string_view preTokenizerName(PreTokenizerKind kind);

class PreTokenizer {
public:
    static Result<PreTokenizer> create(PreTokenizerKind kind);

    // text: valid UTF-8 from byte_level::normalizeLikeLlama (surrogates allowed).
    // Returns pieces as views into text, in order, covering it exactly.
    std::vector<std::string_view> split(std::string_view text) const;
    PreTokenizerKind kind() const { return kind_; }

private:
    struct Regex;  // a compiled PCRE2 pattern (JIT when available)
    PreTokenizerKind kind_ = PreTokenizerKind::Default;
    std::vector<std::shared_ptr<const Regex>> regexes_;  // applied in turn, each to every piece
};

}  // namespace inferscope
