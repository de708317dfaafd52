#include "tokenizer/spm_bytes.h"

#include <algorithm>
#include <cstdio>
#include <queue>

namespace inferscope {

bool isWellFormedUtf8(std::string_view s) {
    for (size_t i = 0; i < s.size();) {
        const auto b = uint8_t(s[i]);
        if (b < 0x80) {
            ++i;
            continue;
        }
        size_t len = 0;
        uint8_t lo = 0x80, hi = 0xBF;  // the allowed range of the second byte
        if (b >= 0xC2 && b <= 0xDF) len = 2;
        else if (b == 0xE0) len = 3, lo = 0xA0;
        else if (b >= 0xE1 && b <= 0xEC) len = 3;
        else if (b == 0xED) len = 3, hi = 0x9F;
        else if (b >= 0xEE && b <= 0xEF) len = 3;
        else if (b == 0xF0) len = 4, lo = 0x90;
        else if (b >= 0xF1 && b <= 0xF3) len = 4;
        else if (b == 0xF4) len = 4, hi = 0x8F;
        if (len == 0 || i + len > s.size()) return false;
        for (size_t k = 1; k < len; ++k) {
            const auto c = uint8_t(s[i + k]);
            if (c < (k == 1 ? lo : 0x80) || c > (k == 1 ? hi : 0xBF)) return false;
        }
        i += len;
    }
    return true;
}

SpmByteMerger::SpmByteMerger(const Vocab& vocab) : vocab_(vocab) {
    ids_.reserve(vocab.pieces.size());
    for (int32_t id = 0; id < vocab.size(); ++id)
        if (!vocab.pieces[id].empty()) ids_[vocab.pieces[id]] = id;  // a repeated piece: the last id
    for (int b = 0; b < 256; ++b) {
        char name[8];
        std::snprintf(name, sizeof name, "<0x%02X>", b);
        int32_t id = lookup(name);
        const char byte = char(b);
        if (id < 0) id = lookup(std::string_view(&byte, 1));
        byteIds_[b] = id >= 0 ? id : vocab.unkId;
    }
}

int32_t SpmByteMerger::lookup(std::string_view text) const {
    const auto it = ids_.find(text);
    return it == ids_.end() ? -1 : it->second;
}

void SpmByteMerger::encode(std::string_view text, std::vector<int32_t>& out) const {
    struct Symbol {
        size_t begin = 0, size = 0;  // size 0: merged into the symbol on its left
        int prev = -1, next = -1;
    };
    std::vector<Symbol> symbols;
    for (size_t pos = 0; pos < text.size();) {
        const auto lead = uint8_t(text[pos]);
        const size_t len = lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : lead >= 0xC0 ? 2 : 1;
        const size_t n = std::min(len, text.size() - pos);
        const int index = int(symbols.size());
        symbols.push_back({pos, n, index - 1, pos + n == text.size() ? -1 : index + 1});
        pos += n;
    }

    struct Pair {
        int left = 0, right = 0;
        float score = 0;
        size_t size = 0;  // bytes of the joined text when queued: stale once either side changed
    };
    // Highest score on top; among equal scores the leftmost.
    const auto below = [](const Pair& a, const Pair& b) { return a.score < b.score || (a.score == b.score && a.left > b.left); };
    std::priority_queue<Pair, std::vector<Pair>, decltype(below)> queue(below);
    const auto offer = [&](int left, int right) {
        if (left < 0 || right < 0) return;
        const size_t size = symbols[left].size + symbols[right].size;
        const int32_t id = lookup(text.substr(symbols[left].begin, size));
        if (id < 0) return;
        queue.push({left, right, vocab_.scores[size_t(id)], size});
    };
    for (int i = 1; i < int(symbols.size()); ++i) offer(i - 1, i);

    while (!queue.empty()) {
        const Pair p = queue.top();
        queue.pop();
        Symbol& left = symbols[p.left];
        Symbol& right = symbols[p.right];
        if (left.size == 0 || right.size == 0 || left.size + right.size != p.size) continue;
        left.size += right.size;
        right.size = 0;
        left.next = right.next;
        if (right.next >= 0) symbols[right.next].prev = p.left;
        offer(left.prev, p.left);
        offer(p.left, left.next);
    }

    // Every merge made a piece, so a final symbol that is not one is a single character.
    for (int i = symbols.empty() ? -1 : 0; i >= 0; i = symbols[i].next) {
        const std::string_view piece = text.substr(symbols[i].begin, symbols[i].size);
        const int32_t id = lookup(piece);
        if (id >= 0) {
            out.push_back(id);
            continue;
        }
        for (char c : piece)
            if (const int32_t b = byteIds_[uint8_t(c)]; b >= 0) out.push_back(b);
    }
}

}  // namespace inferscope
