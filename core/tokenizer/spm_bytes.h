#pragma once
// SentencePiece vocabularies on text that is not valid UTF-8, as llama.cpp tokenizes it.
//
// The SentencePiece library replaces every byte that is not part of a well-formed UTF-8 character
// with U+FFFD before it encodes; llama.cpp runs its own merge instead and keeps the bytes. For
// such text (and only there: on well-formed text the library gives llama.cpp's ids, checked on
// every test vector) the Tokenizer uses this, which reproduces llama.cpp's behaviour:
//   - symbols are cut by the lead byte alone (0x00-0xBF one byte, 0xC0-0xDF two, 0xE0-0xEF three,
//     0xF0-0xFF four, fewer at the end of the text), so a sequence cut short swallows the bytes
//     after it ("\xE2\x82" + "b" is one three-byte symbol);
//   - adjacent symbols whose joined text is any piece of the vocabulary merge, the highest-scored
//     pair first, the leftmost among equal scores;
//   - a final symbol that is a piece becomes its id (when pieces repeat, the last id), any other
//     is written byte by byte as its <0xNN> tokens (or, lacking those, the one-byte piece; the
//     unknown id when that is missing too).
#include <array>
#include <cstdint>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "tokenizer/vocab.h"

namespace inferscope {

// True when `text` is well-formed UTF-8 (the Unicode standard's Table 3-7: no overlong forms,
// surrogates or code points past U+10FFFF, no sequence cut short).
bool isWellFormedUtf8(std::string_view text);

class SpmByteMerger {
public:
    // `vocab` must outlive this (the Tokenizer owns both); its pieces are looked up in place.
    explicit SpmByteMerger(const Vocab& vocab);
    // `text` with the dummy-prefix space already added and ' ' escaped to U+2581; ids appended.
    void encode(std::string_view text, std::vector<int32_t>& out) const;

private:
    int32_t lookup(std::string_view text) const;  // -1 when no piece has that text
    const Vocab& vocab_;
    std::unordered_map<std::string_view, int32_t> ids_;
    std::array<int32_t, 256> byteIds_{};
};

}  // namespace inferscope
