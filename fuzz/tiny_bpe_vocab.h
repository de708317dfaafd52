#pragma once
// A tiny byte-level BPE vocabulary (tokenizer.ggml.model = gpt2) small enough to reason about by
// hand: the fuzz corpus's BPE seeds (make_seeds) and the BPE tests build it.
//   ids 0..255   every byte, as its GPT-2 alphabet character (id = the byte: "a" 97, " " -> "Ġ" 32)
//   256..        merged tokens, in merge order: "he" "Ġt" "Ġthe" "aa" "12" "123" "'M", then "Ġxyz"
//                (reachable by no merge: only Llama 3's ignore_merges produces it)
//   then         <|endoftext|> (control; BOS = EOS), <|im_start|>, <|im_end|> (control), <think> (user-defined)

#include <string>
#include <vector>

#include "tools/gguf_writer.h"

namespace inferscope::tiny_bpe {

enum Id : int32_t { kHe = 256, kSpaceT, kSpaceThe, kAa, k12, k123, kQuoteM, kSpaceXyz, kEndOfText, kImStart, kImEnd, kThink, kCount };

inline std::string alphabetChar(unsigned byte) {
    const bool same = (byte >= 0x21 && byte <= 0x7E) || (byte >= 0xA1 && byte <= 0xAC) || (byte >= 0xAE && byte <= 0xFF);
    unsigned cp = byte;
    if (!same) {  // the 68 others, in order, from U+0100
        cp = 0x100;
        for (unsigned b = 0; b < byte; ++b)
            if (!((b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF))) ++cp;
    }
    std::string s;
    if (cp < 0x80) {
        s.push_back(char(cp));
    } else {
        s.push_back(char(0xC0 | cp >> 6));
        s.push_back(char(0x80 | (cp & 0x3F)));
    }
    return s;
}

// The vocabulary's keys on a writer; `pre` is tokenizer.ggml.pre ("" = no key).
inline void addVocabulary(GgufWriter& w, const std::string& pre) {
    const std::string G = alphabetChar(' ');  // "Ġ"
    std::vector<std::string> tokens;
    for (unsigned b = 0; b < 256; ++b) tokens.push_back(alphabetChar(b));
    for (const std::string& t : {std::string("he"), G + "t", G + "the", std::string("aa"), std::string("12"),
                                 std::string("123"), std::string("'M"), G + "xyz", std::string("<|endoftext|>"), std::string("<|im_start|>"),
                                 std::string("<|im_end|>"), std::string("<think>")})
        tokens.push_back(t);
    std::vector<int32_t> types(tokens.size(), 1);
    types[kEndOfText] = types[kImStart] = types[kImEnd] = 3;
    types[kThink] = 4;
    const std::vector<std::string> merges = {"h e", G + " t", G + "t he", "a a", "1 2", "12 3", "' M"};
    w.add("tokenizer.ggml.model", GgufMetaValue::string("gpt2"));
    if (!pre.empty()) w.add("tokenizer.ggml.pre", GgufMetaValue::string(pre));
    w.add("tokenizer.ggml.tokens", GgufMetaValue::stringArray(std::span<const std::string>(tokens)));
    w.add("tokenizer.ggml.token_type", GgufMetaValue::array(std::span<const int32_t>(types)));
    w.add("tokenizer.ggml.merges", GgufMetaValue::stringArray(std::span<const std::string>(merges)));
    w.add("tokenizer.ggml.bos_token_id", GgufMetaValue::u32(kEndOfText));
    w.add("tokenizer.ggml.eos_token_id", GgufMetaValue::u32(kEndOfText));
}

}  // namespace inferscope::tiny_bpe
