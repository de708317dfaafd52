#pragma once
// GBNF grammars, the notation llama.cpp constrains output with (its grammars/README.md), parsed
// into a flat form the matcher (grammar_matcher.h) walks:
//
//   root  ::= "{" ws pair ("," ws pair)* "}"      # a rule: name ::= alternatives
//   pair  ::= [a-z]+ ":" ws [0-9]{1,3}            # sequences of literals, classes, references
//   ws    ::= ([ \t\n] ws)?                       # groups, ?, *, +, {m}, {m,}, {m,n}
//
// Syntax as llama.cpp reads it: rule names of letters, digits, '-' and '_'; "literals" and
// [classes] ([^...] negated, ranges a-z) with the escapes \n \r \t \\ \" \[ \] \- \xHH \uHHHH
// \UHHHHHHHH; '.' any character; '#' comments to the end of the line; a newline ends a rule except
// inside a group or after '|'. Terminals are Unicode code points (the text is UTF-8). Not
// supported: llama.cpp's token references (<[id]>, <think>), refused by name.
//
// What llama.cpp tolerates and we refuse, each with the line and column: a rule defined twice, a
// reference to a rule never defined, no `root` rule, left recursion (a rule that can reach itself
// before matching any character, including an open repetition of an item that can match nothing),
// a repetition bound above kMaxRepetition, groups nested deeper than kMaxNesting, a grammar larger
// than its limits (text bytes, flat elements after the repetitions are expanded).
//
// Flat form: each rule is a list of alternatives; each alternative a run of elements in
// `elements` ending with an End element. Repetitions and groups become generated rules named
// after the rule they occur in ("pair-2"): x{2,4} is x x R1, R1 ::= x R2 | "", R2 ::= x | "";
// x* is R, R ::= x R | "". Character classes are normalised to sorted, disjoint, positive ranges
// (a negated class is stored as its complement), so matching never looks at negation.

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.h"

namespace inferscope::grammar {

inline constexpr uint32_t kMaxCodePoint = 0x10FFFF;

struct GbnfLimits {
    size_t maxTextBytes = size_t(1) << 20;     // 1 MiB of grammar text
    uint32_t maxRepetition = 2000;             // a {m,n} bound (llama.cpp's limit too)
    uint32_t maxNesting = 64;                  // groups inside groups
    size_t maxElements = size_t(1) << 20;      // flat elements after expansion
    size_t maxRules = size_t(1) << 16;
};

struct CharRange {
    uint32_t lo = 0, hi = 0;  // inclusive
};

struct CharClass {
    std::vector<CharRange> ranges;  // sorted, disjoint, not adjacent
    std::array<uint64_t, 2> ascii{};  // bit c set: code point c < 128 is in the class
    bool contains(uint32_t cp) const;
    // Whether some code point in [lo, hi] is in the class.
    bool intersects(uint32_t lo, uint32_t hi) const;
    // Whether the class contains all of [lo, hi].
    bool covers(uint32_t lo, uint32_t hi) const;
};

enum class ElementKind : uint8_t { End, Chars, Rule };
struct Element {
    ElementKind kind = ElementKind::End;
    uint32_t index = 0;  // Chars: into classes; Rule: the rule id
};

struct GrammarRule {
    std::string name;                   // as written, or "<rule>-<n>" for a generated one
    std::vector<uint32_t> alternatives; // start positions in elements
    uint32_t line = 0, column = 0;      // where it was defined (a generated rule: its group or repetition)
};

struct Grammar {
    std::vector<Element> elements;
    std::vector<CharClass> classes;
    std::vector<GrammarRule> rules;
    uint32_t root = 0;
};

// Parses GBNF text. Errors (InvalidArgument) read "grammar line 3, column 14: <what>".
Result<Grammar> parseGbnf(std::string_view text, const GbnfLimits& limits = {});

}  // namespace inferscope::grammar
