#pragma once
// Byte-level BPE's text handling, as llama.cpp does it (src/unicode.cpp):
// - its lenient UTF-8 reading (every undecodable byte -> U+FFFD, overlong forms and surrogates
//   accepted), re-encoded before the pre-tokenizer runs;
// - GPT-2's byte <-> unicode alphabet, in which vocabulary texts and merges are stored: bytes
//   0x21-0x7E, 0xA1-0xAC, 0xAE-0xFF map to themselves, the other 68 in order to U+0100..U+0143.

#include <cstdint>
#include <string>
#include <string_view>

namespace inferscope::byte_level {

// The text as llama.cpp's unicode_cpts_from_utf8 + unicode_cpt_to_utf8 leave it: each byte that
// does not start a complete sequence becomes U+FFFD and reading resumes at the next byte;
// overlong forms are read (C0 AF -> "/") and re-encoded shortest; surrogates stay (3 bytes).
// A 4-byte form above U+10FFFF (F4 90 80 80, F5..F7 ..) is where llama.cpp throws and aborts:
// here it is one U+FFFD.
std::string normalizeLikeLlama(std::string_view text);

// A copy safe for PCRE2's UTF mode, byte for byte the same length: surrogates (ED A0..BF xx),
// which PCRE2 refuses, become U+E000 (EE 80 80), like them neither letter, number nor space.
// `text` must come from normalizeLikeLlama.
std::string withoutSurrogates(std::string_view text);

// Each byte of `bytes` as its GPT-2 alphabet character, UTF-8 encoded: " hi" -> "Ġhi".
std::string encodeBytes(std::string_view bytes);

// A vocabulary text back to the bytes it stands for: "Ġhi" -> " hi". A character outside the
// alphabet gives llama.cpp's literal "[UNK_BYTE_0x<its UTF-8 in hex><the whole text>]".
std::string decodeText(std::string_view text);

// One code point from `text` at `pos` the way llama.cpp reads it (see normalizeLikeLlama);
// advances pos by the bytes consumed (1 for an undecodable byte, which gives U+FFFD).
uint32_t readCodePoint(std::string_view text, size_t& pos);
void appendUtf8(std::string& out, uint32_t cp);  // cp <= 0x10FFFF; surrogates encoded as is

}  // namespace inferscope::byte_level
