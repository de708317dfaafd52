#include "tokenizer/utf8_stream.h"

#include <cstdint>

namespace inferscope {
namespace {

constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD

}  // namespace

// Strict UTF-8 (no overlongs, surrogates or code points past U+10FFFF).
int utf8Sequence(std::string_view bytes) {
    if (bytes.empty()) return 0;
    const auto* s = reinterpret_cast<const uint8_t*>(bytes.data());
    const uint8_t lead = s[0];
    size_t len = 0;
    uint8_t lo = 0x80, hi = 0xBF;  // allowed range of the second byte
    if (lead < 0x80) return 1;
    if (lead >= 0xC2 && lead <= 0xDF) {
        len = 2;
    } else if (lead >= 0xE0 && lead <= 0xEF) {
        len = 3;
        if (lead == 0xE0) lo = 0xA0;  // overlong
        if (lead == 0xED) hi = 0x9F;  // UTF-16 surrogates
    } else if (lead >= 0xF0 && lead <= 0xF4) {
        len = 4;
        if (lead == 0xF0) lo = 0x90;  // overlong
        if (lead == 0xF4) hi = 0x8F;  // past U+10FFFF
    } else {
        return -1;  // a continuation byte, C0/C1 (overlong) or F5..FF
    }
    for (size_t k = 1; k < len; ++k) {
        if (k >= bytes.size()) return 0;  // a valid start whose last bytes have not arrived yet
        const uint8_t c = s[k];
        if (c < (k == 1 ? lo : 0x80) || c > (k == 1 ? hi : 0xBF)) return -1;
    }
    return int(len);
}

// A byte that cannot start or continue a valid character is replaced on its own and decoding
// resumes at the next byte - exactly SentencePiece's rule, so "\xF0\x9F\xA6z" gives three U+FFFD
// and "z" like decode().
std::string Utf8Stream::push(std::string_view bytes) {
    pending_.append(bytes);
    std::string out;
    const std::string_view all = pending_;
    size_t i = 0;
    while (i < all.size()) {
        const int len = utf8Sequence(all.substr(i));
        if (len == 0) break;  // wait for the character's last bytes
        if (len < 0) {
            out += kReplacement;
            ++i;
            continue;
        }
        out.append(all.substr(i, size_t(len)));
        i += size_t(len);
    }
    pending_.erase(0, i);
    return out;
}

std::string Utf8Stream::flush() {
    std::string out;
    for (size_t k = 0; k < pending_.size(); ++k) out += kReplacement;  // one per byte, as decode()
    pending_.clear();
    return out;
}

}  // namespace inferscope
