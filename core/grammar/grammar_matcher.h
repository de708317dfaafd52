#pragma once
// Incremental matching of a GBNF grammar (gbnf.h) over bytes, and the allowed-token mask over a
// whole vocabulary.
//
// State: the set of pushdown stacks that the bytes so far leave open (each stack: positions of
// the flat grammar, the top one a character class to match next; the empty stack means the
// grammar is complete), plus the unfinished UTF-8 character, if any. Stacks are hash-consed
// (a node is (position, parent), interned), so a set of stacks is a sorted list of node ids and
// two equal sets are the same list. Each distinct set becomes a state of a lazily built automaton:
// its transition on an ASCII byte, on a UTF-8 lead byte (is any character with that lead still
// possible?) and on a whole non-ASCII character are computed once and cached.
//
// The mask: the vocabulary's token texts (their bytes, tokenizer.h's tokenBytes) are kept as a
// byte trie in preorder (TokenTrie). One walk of the trie from the current state follows cached
// transitions, skips the subtree below any dead byte, and allows every token whose bytes it
// reaches alive; a token that ends inside a UTF-8 character is allowed when some character with
// those bytes is. Tokens with no bytes (control tokens) are never allowed; end-of-generation is
// the caller's (allowed when isComplete()).
//
// Bounds: at most kMaxStacks stacks in one set and kMaxExpansion expansion steps per transition
// (an ambiguous grammar past them fails the transition with an error); the caches are dropped and
// rebuilt from the current state when they pass kMaxNodes nodes or kMaxStates states.

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "common/error.h"
#include "grammar/gbnf.h"

namespace inferscope::grammar {

class TokenTrie {
public:
    // tokenBytes[id]: what token id appends to the text; empty = never allowed.
    static TokenTrie build(std::span<const std::string> tokenBytes);

    struct Node {
        uint32_t end;         // index past this node's subtree
        uint32_t firstToken;  // into tokens(): this node's tokens, then its subtree's, in preorder
        uint16_t tokenCount;  // tokens whose bytes end here
        uint8_t byte;
        uint8_t categories;   // byteCategory() of every byte in the subtree, this one included
        uint16_t depth;       // 1 for a first byte
        uint8_t badUtf8;      // some token of the subtree is not (a prefix of) valid UTF-8
        uint8_t pad = 0;
    };
    // Coarse byte classes: digits, letters, space, '"', '\', other printable ASCII, control
    // characters (< 0x20, 0x7F), bytes >= 0x80. A state that returns to itself on every byte of
    // some classes (inside a JSON string: all but '"', '\' and controls) allows a whole subtree
    // made of those bytes without walking it.
    static uint8_t byteCategory(uint8_t b);
    // Tokens of the subtree of node i: tokens()[nodes[i].firstToken, subtreeTokenEnd(i)).
    uint32_t subtreeTokenEnd(size_t i) const {
        return nodes_[i].end < nodes_.size() ? nodes_[nodes_[i].end].firstToken : uint32_t(tokens_.size());
    }
    size_t vocabSize() const { return vocabSize_; }
    const std::vector<Node>& nodes() const { return nodes_; }
    const std::vector<int32_t>& tokens() const { return tokens_; }
    uint32_t maxDepth() const { return maxDepth_; }

private:
    size_t vocabSize_ = 0;
    std::vector<Node> nodes_;
    std::vector<int32_t> tokens_;
    uint32_t maxDepth_ = 0;
};

class GrammarMatcher {
public:
    static constexpr size_t kMaxStacks = 4096;
    static constexpr size_t kMaxExpansion = 1 << 18;
    static constexpr size_t kMaxNodes = 1 << 20;
    static constexpr size_t kMaxStates = 1 << 14;

    explicit GrammarMatcher(std::shared_ptr<const Grammar> grammar);

    // Consumes bytes; on a byte the grammar refuses, an error naming its offset, and the state is
    // left as it was before the call.
    Result<void> acceptBytes(std::string_view bytes);
    // Whether the bytes would be accepted (no state change).
    bool canAccept(std::string_view bytes);
    // The text so far is a complete sentence of the grammar (end of generation may come now).
    bool isComplete() const;
    // Nothing but the end may follow: the grammar is complete and no byte can extend it.
    bool isFinished() const;
    // allowed[id] = 1 for every token of the trie whose bytes can follow, else 0 (size: the trie's
    // vocabulary).
    void fillMask(const TokenTrie& trie, std::span<uint8_t> allowed);
    void reset();
    size_t stateCount() const { return states_.size(); }
    // Trie nodes the last fillMask stepped through, and subtrees it allowed whole.
    size_t lastNodesVisited() const { return visited_; }
    size_t lastSubtreesAllowed() const { return bulk_; }

private:
    static constexpr int32_t kEmpty = -1;     // the empty stack in a set: complete
    static constexpr int32_t kDead = -1;      // no state
    static constexpr int32_t kUnknown = -2;   // transition not computed yet
    static constexpr int32_t kMixed = -3;     // non-ASCII characters lead to different states
    struct StackNode {
        uint32_t pos;
        int32_t parent;
    };
    struct State {
        std::vector<int32_t> stacks;  // sorted node ids; kEmpty first if present
        int32_t ascii[128];
        int8_t lead[128];   // bytes 0x80..0xFF: -2 unknown, 0 no character possible, 1 possible
        int32_t nonAscii = kUnknown;  // the one successor of every non-ASCII character, or kMixed / kDead
        int16_t loops = -1;           // TokenTrie categories whose every byte leads back here; -1 unknown
        bool complete = false;
        bool finished = false;
    };
    // Position in the byte stream: a state and an unfinished UTF-8 character.
    struct Cursor {
        int32_t state;
        uint32_t value = 0;   // bits of the unfinished character so far
        uint8_t remaining = 0;  // continuation bytes still expected
        uint8_t length = 0;     // bytes of the character
    };

    int32_t internNode(uint32_t pos, int32_t parent);
    int32_t internState(std::vector<int32_t>& stacks);
    // Expands (pos, parent) into stacks whose top is a character class (or the empty stack).
    bool expand(uint32_t pos, int32_t parent, std::vector<int32_t>& out);
    int32_t advance(int32_t state, uint32_t cp);
    int32_t onNonAscii(int32_t state, uint32_t cp);
    bool leadPossible(int32_t state, uint8_t byte);
    bool partialPossible(int32_t state, uint32_t value, uint8_t remaining, uint8_t length) const;
    // The next cursor on a byte; false: dead.
    bool step(Cursor& c, uint8_t byte);
    int32_t asciiNext(int32_t state, uint8_t byte);
    uint8_t loops(int32_t state);
    void compactIfLarge();

    std::shared_ptr<const Grammar> g_;
    std::vector<StackNode> nodes_;
    std::unordered_map<uint64_t, int32_t> nodeIds_;
    std::vector<std::unique_ptr<State>> states_;
    std::unordered_map<std::string, int32_t> stateIds_;
    std::unordered_map<uint64_t, int32_t> nonAsciiCache_;  // (state, cp) -> state, for kMixed states
    Cursor cursor_{};
    bool overflow_ = false;
    size_t visited_ = 0, bulk_ = 0;
    // Scratch for expand.
    std::vector<std::pair<uint32_t, int32_t>> work_;
    std::unordered_map<uint64_t, char> seen_;
    std::vector<Cursor> walk_;
};

}  // namespace inferscope::grammar
