#include "tokenizer/byte_level.h"

#include <array>
#include <fmt/format.h>

namespace inferscope::byte_level {
namespace {

constexpr uint32_t kReplacement = 0xFFFD;

bool keepsItsValue(unsigned byte) {
    return (byte >= 0x21 && byte <= 0x7E) || (byte >= 0xA1 && byte <= 0xAC) || (byte >= 0xAE && byte <= 0xFF);
}

// byte -> code point of its alphabet character; and code point (< 0x144) -> byte, or -1.
struct Alphabet {
    std::array<uint32_t, 256> toCodePoint{};
    std::array<int16_t, 0x144> toByte{};
    Alphabet() {
        toByte.fill(-1);
        uint32_t next = 0x100;
        for (unsigned b = 0; b < 256; ++b) {
            toCodePoint[b] = keepsItsValue(b) ? b : next++;
            toByte[toCodePoint[b]] = int16_t(b);
        }
    }
};

const Alphabet& alphabet() {
    static const Alphabet a;
    return a;
}

bool isContinuation(std::string_view text, size_t i) { return i < text.size() && (uint8_t(text[i]) & 0xC0) == 0x80; }

}  // namespace

uint32_t readCodePoint(std::string_view text, size_t& pos) {
    const auto b0 = uint8_t(text[pos]);
    if (b0 < 0x80) {
        pos += 1;
        return b0;
    }
    // Lead byte's length as llama.cpp decides it: 10xxxxxx and 11111xxx are undecodable.
    const size_t len = (b0 & 0x40) == 0 ? 0 : (b0 & 0x20) == 0 ? 2 : (b0 & 0x10) == 0 ? 3 : (b0 & 0x08) == 0 ? 4 : 0;
    bool complete = len != 0;
    for (size_t k = 1; complete && k < len; ++k) complete = isContinuation(text, pos + k);
    if (!complete) {
        pos += 1;
        return kReplacement;
    }
    uint32_t cp = b0 & (0x7Fu >> len);
    for (size_t k = 1; k < len; ++k) cp = cp << 6 | (uint8_t(text[pos + k]) & 0x3F);
    pos += len;
    return cp > 0x10FFFF ? kReplacement : cp;
}

void appendUtf8(std::string& out, uint32_t cp) {
    if (cp < 0x80) {
        out.push_back(char(cp));
    } else if (cp < 0x800) {
        out.push_back(char(0xC0 | cp >> 6));
        out.push_back(char(0x80 | (cp & 0x3F)));
    } else if (cp < 0x10000) {
        out.push_back(char(0xE0 | cp >> 12));
        out.push_back(char(0x80 | (cp >> 6 & 0x3F)));
        out.push_back(char(0x80 | (cp & 0x3F)));
    } else {
        out.push_back(char(0xF0 | cp >> 18));
        out.push_back(char(0x80 | (cp >> 12 & 0x3F)));
        out.push_back(char(0x80 | (cp >> 6 & 0x3F)));
        out.push_back(char(0x80 | (cp & 0x3F)));
    }
}

std::string normalizeLikeLlama(std::string_view text) {
    std::string out;
    out.reserve(text.size());
    for (size_t pos = 0; pos < text.size();) appendUtf8(out, readCodePoint(text, pos));
    return out;
}

std::string withoutSurrogates(std::string_view text) {
    std::string out(text);
    for (size_t i = 0; i + 2 < out.size(); ++i)
        if (uint8_t(out[i]) == 0xED && uint8_t(out[i + 1]) >= 0xA0) {
            out[i] = char(0xEE);
            out[i + 1] = char(0x80);
            out[i + 2] = char(0x80);
            i += 2;
        }
    return out;
}

std::string encodeBytes(std::string_view bytes) {
    std::string out;
    out.reserve(bytes.size() * 2);
    for (char c : bytes) appendUtf8(out, alphabet().toCodePoint[uint8_t(c)]);
    return out;
}

std::string decodeText(std::string_view text) {
    std::string out;
    out.reserve(text.size());
    for (size_t pos = 0; pos < text.size();) {
        const uint32_t cp = readCodePoint(text, pos);
        if (cp < alphabet().toByte.size() && alphabet().toByte[cp] >= 0) {
            out.push_back(char(alphabet().toByte[cp]));
            continue;
        }
        std::string utf8;
        appendUtf8(utf8, cp);
        out += "[UNK_BYTE_0x";
        for (char c : utf8) out += fmt::format("{:02x}", uint8_t(c));
        out += text;
        out += ']';
    }
    return out;
}

}  // namespace inferscope::byte_level
