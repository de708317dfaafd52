#include "tokenizer/utf8_stream.h"

#include <cstdint>

namespace inferscope {
namespace {

constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD

}  // namespace

// Strict UTF-8 (no overlongs, surrogates or code points past U+10FFFF). A byte that cannot start
// or continue a valid character is replaced on its own and decoding resumes at the next byte -
// exactly SentencePiece's rule, so "\xF0\x9F\xA6z" gives three U+FFFD and "z" like decode().
std::string Utf8Stream::push(std::string_view bytes) {
    pending_.append(bytes);
    std::string out;
    const auto* s = reinterpret_cast<const uint8_t*>(pending_.data());
    const size_t n = pending_.size();
    size_t i = 0;
    while (i < n) {
        const uint8_t lead = s[i];
        size_t len = 0;
        uint8_t lo = 0x80, hi = 0xBF;  // allowed range of the second byte
        if (lead < 0x80) {
            out.push_back(char(lead));
            ++i;
            continue;
        } else if (lead >= 0xC2 && lead <= 0xDF) {
            len = 2;
        } else if (lead >= 0xE0 && lead <= 0xEF) {
            len = 3;
            if (lead == 0xE0) lo = 0xA0;  // overlong
            if (lead == 0xED) hi = 0x9F;  // UTF-16 surrogates
        } else if (lead >= 0xF0 && lead <= 0xF4) {
            len = 4;
            if (lead == 0xF0) lo = 0x90;  // overlong
            if (lead == 0xF4) hi = 0x8F;  // past U+10FFFF
        } else {  // a continuation byte, C0/C1 (overlong) or F5..FF
            out += kReplacement;
            ++i;
            continue;
        }
        size_t k = 1;
        bool bad = false;
        for (; k < len && i + k < n; ++k) {
            const uint8_t c = s[i + k];
            if (c < (k == 1 ? lo : 0x80) || c > (k == 1 ? hi : 0xBF)) {
                bad = true;
                break;
            }
        }
        if (bad) {
            out += kReplacement;
            ++i;
            continue;
        }
        if (k < len) break;  // a valid start whose last bytes have not arrived yet
        out.append(pending_, i, len);
        i += len;
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
