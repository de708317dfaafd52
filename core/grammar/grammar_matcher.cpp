// The grammar matcher and the token trie (see grammar_matcher.h).
#include "grammar/grammar_matcher.h"

#include <algorithm>
#include <cstring>
#include <fmt/format.h>

namespace inferscope::grammar {

// ---- TokenTrie --------------------------------------------------------------------------------

namespace {
constexpr uint32_t kMinForLength[5] = {0, 0, 0x80, 0x800, 0x10000};

// UTF-8 as the matcher reads it (leads C2..F4, no overlong forms, nothing past U+10FFFF), without
// a grammar: whether a byte string is valid UTF-8 or a prefix some character can complete.
struct Utf8Check {
    uint32_t value = 0;
    uint8_t remaining = 0, length = 0;
    bool bad = false;
    void push(uint8_t b) {
        if (bad) return;
        if (remaining == 0) {
            if (b < 0x80) return;
            if (b < 0xC2 || b > 0xF4) {
                bad = true;
                return;
            }
            length = b >= 0xF0 ? 4 : b >= 0xE0 ? 3 : 2;
            value = b & (0x7F >> length);
            remaining = uint8_t(length - 1);
            return;
        }
        if ((b & 0xC0) != 0x80) {
            bad = true;
            return;
        }
        value = (value << 6) | (b & 0x3F);
        if (--remaining == 0) {
            bad = value < kMinForLength[length] || value > kMaxCodePoint;
            return;
        }
    }
    bool ok() const {
        if (bad) return false;
        if (remaining == 0) return true;
        const uint32_t shift = 6u * remaining;
        const uint32_t lo = std::max(value << shift, kMinForLength[length]);
        const uint32_t hi = std::min((value << shift) | ((uint32_t(1) << shift) - 1), kMaxCodePoint);
        return lo <= hi;
    }
};
}  // namespace

uint8_t TokenTrie::byteCategory(uint8_t b) {
    if (b >= '0' && b <= '9') return 1;
    if ((b >= 'a' && b <= 'z') || (b >= 'A' && b <= 'Z')) return 2;
    if (b == ' ') return 4;
    if (b == '"') return 8;
    if (b == '\\') return 16;
    if (b > 0x20 && b < 0x7F) return 32;
    if (b < 0x80) return 64;
    return 128;
}

TokenTrie TokenTrie::build(std::span<const std::string> tokenBytes) {
    TokenTrie trie;
    trie.vocabSize_ = tokenBytes.size();
    std::vector<int32_t> order;
    for (size_t id = 0; id < tokenBytes.size(); ++id)
        if (!tokenBytes[id].empty()) order.push_back(int32_t(id));
    std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return tokenBytes[a] < tokenBytes[b]; });
    std::vector<uint32_t> path;  // path[d]: the open node at depth d + 1
    std::vector<Utf8Check> utf8(1);  // utf8[d]: the decoder after d bytes of the current path
    std::string_view prev;
    auto close = [&trie, &path]() {
        Node& node = trie.nodes_[path.back()];
        node.end = uint32_t(trie.nodes_.size());
        path.pop_back();
        if (!path.empty()) {
            trie.nodes_[path.back()].categories |= node.categories;
            trie.nodes_[path.back()].badUtf8 |= node.badUtf8;
        }
    };
    for (int32_t id : order) {
        const std::string_view s = tokenBytes[size_t(id)];
        size_t common = 0;
        while (common < prev.size() && common < s.size() && prev[common] == s[common]) ++common;
        while (path.size() > common) close();
        if (s.size() > 0xFFFF) {  // longer than a depth can say: never allowed
            prev = s.substr(0, common);
            continue;
        }
        utf8.resize(s.size() + 1);
        for (size_t d = common; d < s.size(); ++d) {
            path.push_back(uint32_t(trie.nodes_.size()));
            const uint8_t b = uint8_t(s[d]);
            utf8[d + 1] = utf8[d];
            utf8[d + 1].push(b);
            trie.nodes_.push_back(Node{0, uint32_t(trie.tokens_.size()), 0, b, byteCategory(b), uint16_t(d + 1),
                                       uint8_t(utf8[d + 1].ok() ? 0 : 1)});
        }
        Node& last = trie.nodes_[path.back()];
        ++last.tokenCount;
        trie.tokens_.push_back(id);
        trie.maxDepth_ = std::max(trie.maxDepth_, uint32_t(s.size()));
        prev = s;
    }
    while (!path.empty()) close();
    return trie;
}

// ---- GrammarMatcher ---------------------------------------------------------------------------

GrammarMatcher::GrammarMatcher(std::shared_ptr<const Grammar> grammar) : g_(std::move(grammar)) { reset(); }

int32_t GrammarMatcher::internNode(uint32_t pos, int32_t parent) {
    const uint64_t key = (uint64_t(pos) << 32) | uint32_t(parent + 1);
    auto [it, added] = nodeIds_.try_emplace(key, int32_t(nodes_.size()));
    if (added) nodes_.push_back({pos, parent});
    return it->second;
}

int32_t GrammarMatcher::internState(std::vector<int32_t>& stacks) {
    std::sort(stacks.begin(), stacks.end());
    stacks.erase(std::unique(stacks.begin(), stacks.end()), stacks.end());
    std::string key(reinterpret_cast<const char*>(stacks.data()), stacks.size() * sizeof(int32_t));
    auto [it, added] = stateIds_.try_emplace(std::move(key), int32_t(states_.size()));
    if (added) {
        auto s = std::make_unique<State>();
        s->stacks = stacks;
        std::fill(std::begin(s->ascii), std::end(s->ascii), kUnknown);
        std::fill(std::begin(s->lead), std::end(s->lead), int8_t(-2));
        s->complete = !stacks.empty() && stacks.front() == kEmpty;
        s->finished = stacks.size() == 1 && s->complete;
        states_.push_back(std::move(s));
    }
    return it->second;
}

bool GrammarMatcher::expand(uint32_t pos, int32_t parent, std::vector<int32_t>& out) {
    const auto& elements = g_->elements;
    work_.clear();
    work_.push_back({pos, parent});
    while (!work_.empty()) {
        auto [p, par] = work_.back();
        work_.pop_back();
        const uint64_t key = (uint64_t(p) << 32) | uint32_t(par + 1);
        if (!seen_.try_emplace(key, 1).second) continue;
        if (seen_.size() > kMaxExpansion) {
            overflow_ = true;
            return false;
        }
        const Element e = elements[p];
        if (e.kind == ElementKind::End) {
            if (par < 0) out.push_back(kEmpty);
            else work_.push_back({nodes_[size_t(par)].pos, nodes_[size_t(par)].parent});
        } else if (e.kind == ElementKind::Chars) {
            out.push_back(internNode(p, par));
        } else {
            const int32_t cont = elements[p + 1].kind == ElementKind::End ? par : internNode(p + 1, par);
            for (uint32_t a : g_->rules[e.index].alternatives) work_.push_back({a, cont});
        }
    }
    return true;
}

int32_t GrammarMatcher::advance(int32_t state, uint32_t cp) {
    std::vector<int32_t> out;
    if (seen_.bucket_count() > 4096) seen_ = {};
    seen_.clear();
    const std::vector<int32_t>& stacks = states_[size_t(state)]->stacks;
    for (size_t i = 0; i < stacks.size(); ++i) {
        const int32_t id = stacks[i];
        if (id == kEmpty) continue;
        const StackNode n = nodes_[size_t(id)];
        if (!g_->classes[g_->elements[n.pos].index].contains(cp)) continue;
        if (!expand(n.pos + 1, n.parent, out)) return kDead;
    }
    if (out.empty()) return kDead;
    if (out.size() > kMaxStacks) {
        overflow_ = true;
        return kDead;
    }
    return internState(out);
}

int32_t GrammarMatcher::onNonAscii(int32_t state, uint32_t cp) {
    State& s = *states_[size_t(state)];
    if (s.nonAscii == kUnknown) {
        bool uniform = true;
        for (int32_t id : s.stacks) {
            if (id == kEmpty) continue;
            const CharClass& c = g_->classes[g_->elements[nodes_[size_t(id)].pos].index];
            if (!c.covers(0x80, kMaxCodePoint) && c.intersects(0x80, kMaxCodePoint)) uniform = false;
        }
        s.nonAscii = uniform ? advance(state, 0x80) : kMixed;
    }
    if (s.nonAscii != kMixed) return s.nonAscii;
    const uint64_t key = (uint64_t(uint32_t(state)) << 21) | cp;
    auto it = nonAsciiCache_.find(key);
    if (it != nonAsciiCache_.end()) return it->second;
    const int32_t next = advance(state, cp);
    nonAsciiCache_.emplace(key, next);
    return next;
}

bool GrammarMatcher::partialPossible(int32_t state, uint32_t value, uint8_t remaining, uint8_t length) const {
    const uint32_t shift = 6u * remaining;
    uint32_t lo = value << shift;
    uint32_t hi = lo | ((uint32_t(1) << shift) - 1);
    lo = std::max(lo, kMinForLength[length]);
    hi = std::min(hi, kMaxCodePoint);
    if (lo > hi) return false;
    for (int32_t id : states_[size_t(state)]->stacks) {
        if (id == kEmpty) continue;
        if (g_->classes[g_->elements[nodes_[size_t(id)].pos].index].intersects(lo, hi)) return true;
    }
    return false;
}

bool GrammarMatcher::leadPossible(int32_t state, uint8_t byte) {
    int8_t& cached = states_[size_t(state)]->lead[byte - 0x80];
    if (cached == -2) {
        const uint8_t length = byte >= 0xF0 ? 4 : byte >= 0xE0 ? 3 : 2;
        cached = partialPossible(state, byte & (0x7F >> length), uint8_t(length - 1), length) ? 1 : 0;
    }
    return cached == 1;
}

int32_t GrammarMatcher::asciiNext(int32_t state, uint8_t byte) {
    int32_t t = states_[size_t(state)]->ascii[byte];
    if (t == kUnknown) {
        t = advance(state, byte);
        states_[size_t(state)]->ascii[byte] = t;
    }
    return t;
}

uint8_t GrammarMatcher::loops(int32_t state) {
    if (states_[size_t(state)]->loops >= 0) return uint8_t(states_[size_t(state)]->loops);
    uint8_t mask = 0;
    for (uint8_t category = 1; category != 0 && category < 128; category = uint8_t(category << 1)) {
        bool all = true;
        for (int b = 0; b < 128 && all; ++b)
            if (TokenTrie::byteCategory(uint8_t(b)) == category && asciiNext(state, uint8_t(b)) != state) all = false;
        if (all) mask |= category;
    }
    if (onNonAscii(state, 0x80) == state && states_[size_t(state)]->nonAscii == state) mask |= 128;
    states_[size_t(state)]->loops = mask;
    return mask;
}

bool GrammarMatcher::step(Cursor& c, uint8_t byte) {
    if (c.remaining == 0) {
        if (byte < 0x80) {
            const int32_t t = asciiNext(c.state, byte);
            if (t == kDead) return false;
            c.state = t;
            return true;
        }
        if (byte < 0xC2 || byte > 0xF4) return false;  // a continuation, an overlong lead, past U+10FFFF
        if (!leadPossible(c.state, byte)) return false;
        c.length = byte >= 0xF0 ? 4 : byte >= 0xE0 ? 3 : 2;
        c.value = byte & (0x7F >> c.length);
        c.remaining = uint8_t(c.length - 1);
        return true;
    }
    if ((byte & 0xC0) != 0x80) return false;
    c.value = (c.value << 6) | (byte & 0x3F);
    if (--c.remaining > 0) return true;
    if (c.value < kMinForLength[c.length] || c.value > kMaxCodePoint) return false;
    const int32_t next = onNonAscii(c.state, c.value);
    if (next == kDead) return false;
    c.state = next;
    return true;
}

void GrammarMatcher::reset() {
    nodes_.clear();
    nodeIds_.clear();
    states_.clear();
    stateIds_.clear();
    nonAsciiCache_.clear();
    overflow_ = false;
    std::vector<int32_t> out;
    seen_.clear();
    for (uint32_t a : g_->rules[g_->root].alternatives) expand(a, -1, out);
    cursor_ = Cursor{internState(out)};
}

void GrammarMatcher::compactIfLarge() {
    if (nodes_.size() <= kMaxNodes && states_.size() <= kMaxStates && nonAsciiCache_.size() <= kMaxNodes) return;
    // Each current stack as its positions, bottom first; then rebuilt in fresh caches.
    std::vector<std::vector<uint32_t>> stacks;
    bool complete = false;
    for (int32_t id : states_[size_t(cursor_.state)]->stacks) {
        if (id == kEmpty) {
            complete = true;
            continue;
        }
        std::vector<uint32_t> positions;
        for (int32_t n = id; n >= 0; n = nodes_[size_t(n)].parent) positions.push_back(nodes_[size_t(n)].pos);
        std::reverse(positions.begin(), positions.end());
        stacks.push_back(std::move(positions));
    }
    nodes_.clear();
    nodeIds_.clear();
    states_.clear();
    stateIds_.clear();
    nonAsciiCache_.clear();
    std::vector<int32_t> ids;
    if (complete) ids.push_back(kEmpty);
    for (const auto& positions : stacks) {
        int32_t parent = -1;
        for (uint32_t p : positions) parent = internNode(p, parent);
        ids.push_back(parent);
    }
    cursor_.state = internState(ids);
}

bool GrammarMatcher::canAccept(std::string_view bytes) {
    if (overflow_) return false;
    Cursor c = cursor_;
    for (char b : bytes)
        if (!step(c, uint8_t(b))) return false;
    return true;
}

Result<void> GrammarMatcher::acceptBytes(std::string_view bytes) {
    compactIfLarge();
    Cursor c = cursor_;
    for (size_t i = 0; i < bytes.size(); ++i) {
        if (!step(c, uint8_t(bytes[i]))) {
            if (overflow_)
                return fail(ErrorKind::InvalidArgument,
                            fmt::format("the grammar is too ambiguous: more than {} open parses", kMaxStacks));
            return fail(ErrorKind::InvalidArgument,
                        fmt::format("byte {} (0x{:02X}) is not allowed by the grammar here", i, uint8_t(bytes[i])));
        }
    }
    cursor_ = c;
    return {};
}

bool GrammarMatcher::isComplete() const { return cursor_.remaining == 0 && states_[size_t(cursor_.state)]->complete; }

bool GrammarMatcher::isFinished() const { return cursor_.remaining == 0 && states_[size_t(cursor_.state)]->finished; }

void GrammarMatcher::fillMask(const TokenTrie& trie, std::span<uint8_t> allowed) {
    std::fill(allowed.begin(), allowed.end(), uint8_t(0));
    compactIfLarge();
    walk_.resize(size_t(trie.maxDepth()) + 1);
    walk_[0] = cursor_;
    const auto& nodes = trie.nodes();
    const auto& tokens = trie.tokens();
    const size_t n = nodes.size();
    size_t visited = 0, bulk = 0;
    for (size_t i = 0; i < n;) {
        const TokenTrie::Node& node = nodes[i];
        Cursor c = walk_[node.depth - 1];
        if (c.remaining == 0 && !node.badUtf8 && (node.categories & ~loops(c.state)) == 0) {
            // Every byte below leads back to this state: the whole subtree is allowed.
            const uint32_t last = trie.subtreeTokenEnd(i);
            for (uint32_t t = node.firstToken; t < last; ++t) {
                const int32_t id = tokens[t];
                if (size_t(id) < allowed.size()) allowed[size_t(id)] = 1;
            }
            i = node.end;
            ++bulk;
            continue;
        }
        ++visited;
        if (!step(c, node.byte)) {
            i = node.end;
            continue;
        }
        if (node.tokenCount != 0 && (c.remaining == 0 || partialPossible(c.state, c.value, c.remaining, c.length)))
            for (uint32_t t = 0; t < node.tokenCount; ++t) {
                const int32_t id = tokens[node.firstToken + t];
                if (size_t(id) < allowed.size()) allowed[size_t(id)] = 1;
            }
        walk_[node.depth] = c;
        ++i;
    }
    visited_ = visited;
    bulk_ = bulk;
}

}  // namespace inferscope::grammar
