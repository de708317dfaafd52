#include "tokenizer/bpe_model.h"

#include <cstring>
#include <queue>

#include "tokenizer/byte_level.h"

namespace inferscope {
namespace {

// Unambiguous key of a pair whatever bytes the texts hold (a hostile merge may contain spaces).
std::string pairKey(std::string_view left, std::string_view right) {
    std::string key(sizeof(uint32_t) + left.size() + right.size(), '\0');
    const auto leftSize = uint32_t(left.size());
    std::memcpy(key.data(), &leftSize, sizeof leftSize);
    std::memcpy(key.data() + sizeof leftSize, left.data(), left.size());
    std::memcpy(key.data() + sizeof leftSize + left.size(), right.data(), right.size());
    return key;
}

// Byte length of the UTF-8 character starting with `lead`, judged by the lead byte alone.
size_t characterLength(uint8_t lead) { return lead < 0x80 ? 1 : lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : lead >= 0xC0 ? 2 : 1; }

// A symbol of the word being merged: bytes [start, start+size) of it, in a doubly linked list.
struct Symbol {
    int prev, next;
    size_t start, size;
};

// An adjacent pair waiting to merge. Valid when popped only if both symbols still have the sizes
// they had when it was queued (a symbol only grows, and a merged-away one has size 0).
struct Pair {
    int32_t rank;
    int left, right;
    size_t size;  // left size + right size when queued
};
struct LaterPair {  // priority: lowest rank, then leftmost
    bool operator()(const Pair& a, const Pair& b) const { return a.rank > b.rank || (a.rank == b.rank && a.left > b.left); }
};

}  // namespace

Result<BpeModel> BpeModel::create(const Vocab& vocab) {
    auto pre = PreTokenizer::create(vocab.preTokenizer.kind);
    if (!pre) return std::unexpected(pre.error());
    BpeModel model(std::move(*pre), vocab.preTokenizer.ignoreMerges);
    model.ids_.reserve(vocab.pieces.size());
    for (int32_t id = 0; id < vocab.size(); ++id) model.ids_.emplace(vocab.pieces[id], id);
    model.ranks_.reserve(vocab.merges.size());
    for (size_t rank = 0; rank < vocab.merges.size(); ++rank) {
        const std::string_view merge = vocab.merges[rank];
        const size_t space = merge.find(' ', 1);  // as llama.cpp: a first symbol may itself be " "
        if (space == std::string_view::npos) continue;  // llama.cpp stores ("", ""), which never matches
        model.ranks_.emplace(pairKey(merge.substr(0, space), merge.substr(space + 1)), int32_t(rank));  // first rank wins
    }
    return model;
}

int32_t BpeModel::rankOf(std::string_view left, std::string_view right) const {
    const auto it = ranks_.find(pairKey(left, right));
    return it == ranks_.end() ? -1 : it->second;
}

int32_t BpeModel::idOf(std::string_view text) const {
    const auto it = ids_.find(std::string(text));
    return it == ids_.end() ? -1 : it->second;
}

void BpeModel::encode(std::string_view fragment, std::vector<int32_t>& out) const {
    const std::string text = byte_level::normalizeLikeLlama(fragment);
    for (std::string_view piece : pre_.split(text)) encodePiece(byte_level::encodeBytes(piece), out);
}

// word: one pre-token in the GPT-2 alphabet ("Ġhello"), merged symbol by symbol.
void BpeModel::encodePiece(const std::string& word, std::vector<int32_t>& out) const {
    if (ignoreMerges_) {  // Llama 3: a pre-token that is a token is taken whole, even if merges cannot reach it
        if (const int32_t id = idOf(word); id >= 0) {
            out.push_back(id);
            return;
        }
    }
    std::vector<Symbol> symbols;  // [characters of word]
    for (size_t start = 0; start < word.size();) {
        const size_t size = std::min(characterLength(uint8_t(word[start])), word.size() - start);
        symbols.push_back({int(symbols.size()) - 1, int(symbols.size()) + 1, start, size});
        start += size;
    }
    if (symbols.empty()) return;
    symbols.back().next = -1;

    const std::string_view w(word);
    auto text = [&](const Symbol& s) { return w.substr(s.start, s.size); };
    std::priority_queue<Pair, std::vector<Pair>, LaterPair> queue;
    auto tryQueue = [&](int left, int right) {
        if (left < 0 || right < 0) return;
        const int32_t rank = rankOf(text(symbols[left]), text(symbols[right]));
        if (rank >= 0) queue.push({rank, left, right, symbols[left].size + symbols[right].size});
    };
    for (int i = 0; i + 1 < int(symbols.size()); ++i) tryQueue(i, i + 1);

    while (!queue.empty()) {
        const Pair pair = queue.top();
        queue.pop();
        Symbol& left = symbols[pair.left];
        Symbol& right = symbols[pair.right];
        if (left.size == 0 || right.size == 0 || left.size + right.size != pair.size) continue;  // stale
        left.size += right.size;  // the right symbol's bytes follow the left's in the word
        right.size = 0;
        left.next = right.next;
        if (right.next >= 0) symbols[right.next].prev = pair.left;
        tryQueue(left.prev, pair.left);
        tryQueue(pair.left, left.next);
    }

    for (int i = 0; i >= 0; i = symbols[i].next) {
        const std::string_view symbol = text(symbols[i]);
        if (const int32_t id = idOf(symbol); id >= 0) {
            out.push_back(id);
            continue;
        }
        // As llama.cpp: a symbol that is no token falls back to its single bytes, dropping those
        // that are no token either (never the case for a complete byte-level vocabulary).
        for (char c : symbol)
            if (const int32_t id = idOf(std::string_view(&c, 1)); id >= 0) out.push_back(id);
    }
}

}  // namespace inferscope
