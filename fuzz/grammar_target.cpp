#include "grammar_target.h"

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "grammar/gbnf.h"
#include "grammar/grammar_matcher.h"
#include "grammar/json_schema.h"

namespace inferscope::fuzz {
namespace {

using namespace inferscope::grammar;

void require(bool condition, const char* what) {
    if (condition) return;
    std::fprintf(stderr, "grammar target: broken property: %s\n", what);
    std::abort();
}

void requireOwnMessage(const std::string& message) {
    require(!message.empty(), "a refusal says why");
    for (char c : message) require(c >= ' ' && c <= '~', "a refusal repeats nothing of the text");
}

// A small vocabulary of JSON-ish and grammar-ish pieces, a multi-byte character, its first byte
// alone, and an invalid byte.
const std::vector<std::string>& vocabulary() {
    static const std::vector<std::string> v{"{", "}", "[", "]", "\"", ":", ",", " ", "\n", "a", "b", "x", "0", "1", "-", ".",
                                            "true", "false", "null", "\"a\"", "{\"", "\":", "é", "\xC3", "\xFF", "ab", "aaaa", "12"};
    return v;
}

// Follows the grammar for a few tokens, taking the first allowed token each time.
void follow(const std::shared_ptr<const Grammar>& g) {
    static const TokenTrie trie = TokenTrie::build(vocabulary());
    GrammarMatcher m(g);
    std::vector<uint8_t> mask(vocabulary().size());
    for (int step = 0; step < 6; ++step) {
        m.fillMask(trie, mask);
        if (m.overflowed()) return;
        size_t pick = mask.size();
        for (size_t i = 0; i < mask.size(); ++i) {
            if (!mask[i]) continue;
            require(m.canAccept(vocabulary()[i]) || m.overflowed(), "every token the mask allows is accepted");
            if (pick == mask.size()) pick = i;
        }
        if (pick == mask.size()) return;
        const auto ok = m.acceptBytes(vocabulary()[pick]);
        require(ok.has_value() || m.overflowed(), "the picked token is accepted");
        if (!ok) return;
    }
}

}  // namespace

void runGrammarInput(std::span<const uint8_t> input) {
    const std::string_view text(reinterpret_cast<const char*>(input.data()), input.size());
    GbnfLimits gbnf;
    gbnf.maxTextBytes = kGrammarTextLimit;
    gbnf.quoteInput = false;
    if (auto g = parseGbnf(text, gbnf)) {
        follow(std::make_shared<const Grammar>(std::move(*g)));
    } else {
        requireOwnMessage(g.error().message);
    }
    JsonSchemaLimits schema;
    schema.maxTextBytes = kGrammarTextLimit;
    schema.quoteInput = false;
    schema.strict = !input.empty() && (input[0] & 1);
    if (auto s = jsonSchemaToGbnf(text, schema)) {
        GbnfLimits produced;
        produced.maxTextBytes = schema.maxGrammarBytes;
        auto g = parseGbnf(*s, produced);
        require(g.has_value(), "the grammar of a converted schema parses");
        follow(std::make_shared<const Grammar>(std::move(*g)));
    } else {
        requireOwnMessage(s.error().message);
    }
}

}  // namespace inferscope::fuzz
