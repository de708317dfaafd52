#pragma once
// A vocabulary as plain data: what the tokenizer keys of a GGUF file (or the pieces of a
// tokenizer.model) say, SentencePiece or byte-level BPE. Validated before a Vocab exists; the
// Tokenizer owns one.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/pre_tokenizer.h"

namespace inferscope {

// Largest vocabulary accepted. Real ones have 32000 (Llama 2) to 262144 (Gemma 3) tokens; the
// bound only keeps a hostile count from driving allocations.
inline constexpr uint64_t kMaxVocabSize = uint64_t(1) << 20;

// Same values as GGUF tokenizer.ggml.token_type and SentencePiece's ModelProto piece type.
enum class TokenType : int32_t { Normal = 1, Unknown = 2, Control = 3, UserDefined = 4, Unused = 5, Byte = 6 };

// tokenizer.ggml.model: "llama" is SentencePiece (scores), "gpt2" byte-level BPE (merges).
enum class TokenizerFamily { SentencePiece, BytePair };

struct Vocab {
    TokenizerFamily family = TokenizerFamily::SentencePiece;
    std::vector<std::string> pieces;  // [nVocab] as stored: "▁there", "<0x0A>", "<s>"; BPE: "Ġthere", "Ċ"
    std::vector<float> scores;        // [nVocab] SentencePiece merge priority: the higher-scored merge wins
                                      // (BPE files need none: 0)
    std::vector<TokenType> types;     // [nVocab]
    // Special ids, -1 when the file names none (never guessed).
    int32_t bosId = -1;
    int32_t eosId = -1;
    int32_t unkId = -1;
    int32_t padId = -1;
    int32_t eotId = -1;               // end of turn (chat models): the key, else found by text as llama.cpp does
    int32_t eomId = -1;               // end of message (Llama 3.1 <|eom_id|>)
    // Every id that ends generation, as llama.cpp builds the set: EOS, EOT, EOM, FIM pad/repo/sep and
    // every token named <|eot_id|>, <|im_end|>, <|end|>, <end_of_turn>, <|endoftext|>, <|eom_id|>, <EOT>.
    std::vector<int32_t> eogIds;      // sorted
    bool addBos = true;               // tokenizer.ggml.add_bos_token (BPE default: by pre-tokenizer)
    bool addEos = false;              // tokenizer.ggml.add_eos_token
    bool addSpacePrefix = true;       // tokenizer.ggml.add_space_prefix = SentencePiece add_dummy_prefix
    // [nVocab] or empty: special pieces that eat the ASCII whitespace after them when matched in text
    // (llama.cpp's RSTRIP, which it gives by model name only: Phi-3's special tokens).
    std::vector<bool> rstrip;
    // Byte-level BPE only:
    std::string preTokenizerName;     // tokenizer.ggml.pre as written ("" when absent)
    PreTokenizerSpec preTokenizer{PreTokenizerKind::Default, false, std::nullopt, true};
    std::vector<std::string> merges;  // [nMerges] "left right", rank = index

    int32_t size() const { return int32_t(pieces.size()); }
    bool hasByteTokens() const {
        for (TokenType t : types)
            if (t == TokenType::Byte) return true;
        return false;
    }
};

// True when the piece is one UTF-8 character (judged by its lead byte). SentencePiece's BPE looks
// single characters up among control pieces too, then fails Encode on the control id it produced
// ("all normalized characters are not consumed"): such a vocabulary must be refused at load.
inline bool isOneCharacter(std::string_view piece) {
    if (piece.empty()) return false;
    const auto lead = uint8_t(piece[0]);
    const size_t len = lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : lead >= 0xC0 ? 2 : 1;
    return piece.size() == len;
}

}  // namespace inferscope
