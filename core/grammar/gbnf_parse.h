#pragma once
// The GBNF parser's state (gbnf.h's parseGbnf), shared by the files it is split over: gbnf.cpp
// (the text: characters, escapes, UTF-8, and the messages that point into it), gbnf_syntax.cpp
// (rules, alternatives, sequences, groups and repetitions lowered to generated rules as they are
// read) and gbnf_checks.cpp (what needs the whole grammar: undefined rules, root, left recursion,
// and the flat form). Private to grammar/.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "grammar/gbnf.h"

namespace inferscope::grammar::gbnf_detail {

inline bool isNameChar(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
}

class Parser {
public:
    Parser(std::string_view text, const GbnfLimits& limits) : s_(text), limits_(limits) {}

    Result<Grammar> run();

private:
    using Sequence = std::vector<Element>;
    struct RuleInfo {
        bool defined = false;
        bool generated = false;
        bool repetition = false;
        size_t offset = 0;  // definition, or first reference while undefined
        std::vector<Sequence> alternatives;
    };

    // ---- errors (gbnf.cpp) --------------------------------------------------------------------
    // Line and column (in characters) of a byte offset. Every rule asks once (finish()): from
    // tables made in one pass, not a walk from the start each time (quadratic in a long grammar).
    std::pair<uint32_t, uint32_t> lineColumn(size_t offset) const;
    mutable std::vector<uint32_t> charsBefore_;  // characters (UTF-8 lead bytes) before each offset
    mutable std::vector<size_t> lineStarts_;
    bool err(size_t offset, std::string_view what);
    // What the text holds, in a message: quoted when the limits allow it (printable ASCII only:
    // a message is valid UTF-8 whatever the text), else said without it (the line and column point
    // at it).
    std::string shownChar(char c, bool escape = false) const;
    std::string shownRule(const std::string& name) const;

    // ---- lexing (gbnf.cpp) --------------------------------------------------------------------
    bool eof() const { return pos_ >= s_.size(); }
    char peek(size_t ahead = 0) const { return pos_ + ahead < s_.size() ? s_[pos_ + ahead] : '\0'; }
    void skipSpace(bool newlines);
    std::string parseName();
    // One UTF-8 code point of the text.
    std::optional<uint32_t> decodeUtf8();
    std::optional<uint32_t> parseHex(size_t digits, size_t start);
    // A character of a literal or class, escapes decoded.
    std::optional<uint32_t> parseChar();

    // ---- rules (gbnf_syntax.cpp) --------------------------------------------------------------
    uint32_t ruleId(const std::string& name, size_t offset);
    std::optional<uint32_t> generatedRule(uint32_t parent, size_t offset, bool repetition);
    bool addElements(size_t n, size_t offset);
    bool addAlternative(uint32_t rule, Sequence seq, size_t offset);
    uint32_t addClass(CharClass c);
    bool parseGrammar();
    bool parseAlternatives(uint32_t rule, bool nested, uint32_t depth);
    bool parseSequence(uint32_t rule, Sequence& out, bool nested, uint32_t depth);
    bool parseNumber(uint32_t& v);
    bool parseBounds(size_t start, uint32_t& min, uint32_t& max, bool& unbounded);
    // Replaces out[lastStart, end) by its repetition.
    bool repeat(uint32_t rule, Sequence& out, size_t lastStart, uint32_t min, uint32_t max, bool unbounded, size_t offset);

    // ---- whole-grammar checks and the flat form (gbnf_checks.cpp) -----------------------------
    bool finish();
    bool checkLeftRecursion();
    bool reportCycle(const std::vector<std::pair<uint32_t, size_t>>& path, uint32_t t);

    std::string_view s_;
    GbnfLimits limits_;
    size_t pos_ = 0;
    Grammar g_;
    std::unordered_map<std::string, uint32_t> ids_;
    std::vector<RuleInfo> info_;
    size_t elementCount_ = 0;
    std::string error_;
};

}  // namespace inferscope::grammar::gbnf_detail
