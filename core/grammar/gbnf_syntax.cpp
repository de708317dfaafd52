// GBNF's syntax (see gbnf.h; the parser's state in gbnf_parse.h): rules, alternatives, sequences of
// literals, character classes and rule references, groups and repetitions, each lowered to
// generated rules as it is read, with the limits on rules, elements, nesting and repetition counted
// as they grow.
#include <algorithm>
#include <fmt/format.h>

#include "grammar/gbnf_parse.h"

namespace inferscope::grammar::gbnf_detail {
namespace {

CharClass normalise(std::vector<CharRange> ranges, bool negated) {
    std::sort(ranges.begin(), ranges.end(), [](const CharRange& a, const CharRange& b) { return a.lo < b.lo; });
    std::vector<CharRange> merged;
    for (const CharRange& r : ranges) {
        if (!merged.empty() && r.lo <= merged.back().hi + 1) merged.back().hi = std::max(merged.back().hi, r.hi);
        else merged.push_back(r);
    }
    CharClass out;
    if (negated) {
        uint32_t next = 0;
        for (const CharRange& r : merged) {
            if (r.lo > next) out.ranges.push_back({next, r.lo - 1});
            next = r.hi + 1;
        }
        if (next <= kMaxCodePoint) out.ranges.push_back({next, kMaxCodePoint});
    } else {
        out.ranges = std::move(merged);
    }
    for (const CharRange& r : out.ranges)
        for (uint32_t c = r.lo; c <= std::min<uint32_t>(r.hi, 127); ++c) out.ascii[c >> 6] |= uint64_t(1) << (c & 63);
    return out;
}

}  // namespace

// ---- rules ----------------------------------------------------------------------------------

uint32_t Parser::ruleId(const std::string& name, size_t offset) {
    auto [it, added] = ids_.try_emplace(name, uint32_t(info_.size()));
    if (added) {
        info_.push_back(RuleInfo{});
        info_.back().offset = offset;
        g_.rules.push_back(GrammarRule{name, {}, 0, 0});
    }
    return it->second;
}

std::optional<uint32_t> Parser::generatedRule(uint32_t parent, size_t offset, bool repetition) {
    if (info_.size() >= limits_.maxRules) {
        err(offset, fmt::format("more than {} rules (groups and repetitions count)", limits_.maxRules));
        return std::nullopt;
    }
    const uint32_t id = uint32_t(info_.size());
    info_.push_back(RuleInfo{true, true, repetition, offset, {}});
    // A bounded prefix of the parent's name: a long name repeated in every generated rule would
    // cost its length times the rules.
    const std::string& parentName = g_.rules[parent].name;
    g_.rules.push_back(GrammarRule{fmt::format("{}-{}", std::string_view(parentName).substr(0, kMaxGeneratedPrefix), id), {}, 0, 0});
    return id;
}

bool Parser::addElements(size_t n, size_t offset) {
    elementCount_ += n;
    if (elementCount_ > limits_.maxElements)
        return err(offset, fmt::format("the grammar expands to more than {} elements", limits_.maxElements));
    return true;
}

bool Parser::addAlternative(uint32_t rule, Sequence seq, size_t offset) {
    if (!addElements(seq.size() + 1, offset)) return false;
    info_[rule].alternatives.push_back(std::move(seq));
    return true;
}

uint32_t Parser::addClass(CharClass c) {
    g_.classes.push_back(std::move(c));
    return uint32_t(g_.classes.size() - 1);
}

// ---- the text, rule by rule ------------------------------------------------------------------

bool Parser::parseGrammar() {
    skipSpace(true);
    while (!eof()) {
        const size_t start = pos_;
        const std::string name = parseName();
        if (name.empty()) return err(start, "expected a rule name, found " + shownChar(peek()));
        if (peek() == '<') return err(pos_, "token references (<...>) are not supported");
        const uint32_t id = ruleId(name, start);
        if (info_[id].defined) {
            auto [line, column] = lineColumn(info_[id].offset);
            return err(start, fmt::format("{} is defined twice (first at line {}, column {})", shownRule(name), line, column));
        }
        info_[id].defined = true;
        info_[id].offset = start;
        skipSpace(false);
        if (s_.substr(pos_, 3) != "::=") return err(pos_, limits_.quoteInput ? fmt::format("expected '::=' after the rule name '{}'", name)
                                                                    : std::string("expected '::=' after the rule name"));
        pos_ += 3;
        skipSpace(true);
        if (!parseAlternatives(id, false, 0)) return false;
        skipSpace(false);
        if (peek() == '\r') ++pos_;
        if (!eof() && peek() != '\n') return err(pos_, "unexpected " + shownChar(peek()));
        skipSpace(true);
    }
    return true;
}

bool Parser::parseAlternatives(uint32_t rule, bool nested, uint32_t depth) {
    while (true) {
        const size_t start = pos_;
        Sequence seq;
        if (!parseSequence(rule, seq, nested, depth)) return false;
        if (!addAlternative(rule, std::move(seq), start)) return false;
        skipSpace(nested);
        if (peek() != '|') return true;
        ++pos_;
        skipSpace(true);
    }
}

bool Parser::parseSequence(uint32_t rule, Sequence& out, bool nested, uint32_t depth) {
    size_t lastStart = 0;
    bool hasLast = false;
    while (true) {
        skipSpace(nested);
        if (eof()) return true;
        const size_t start = pos_;
        const char c = peek();
        if (c == '"') {
            ++pos_;
            lastStart = out.size();
            hasLast = true;
            while (peek() != '"') {
                if (eof() || peek() == '\n') return err(start, "unterminated literal");
                auto cp = parseChar();
                if (!cp) return false;
                out.push_back({ElementKind::Chars, addClass(normalise({{*cp, *cp}}, false))});
            }
            ++pos_;
        } else if (c == '[') {
            ++pos_;
            bool negated = false;
            if (peek() == '^') {
                negated = true;
                ++pos_;
            }
            std::vector<CharRange> ranges;
            while (peek() != ']') {
                if (eof()) return err(start, "unterminated character class");
                auto lo = parseChar();
                if (!lo) return false;
                uint32_t hi = *lo;
                if (peek() == '-' && peek(1) != ']' && pos_ + 1 < s_.size()) {
                    ++pos_;
                    const size_t at = pos_;
                    auto h = parseChar();
                    if (!h) return false;
                    if (*h < *lo) return err(at, fmt::format("range end U+{:04X} is below its start U+{:04X}", *h, *lo));
                    hi = *h;
                }
                ranges.push_back({*lo, hi});
            }
            ++pos_;
            lastStart = out.size();
            hasLast = true;
            out.push_back({ElementKind::Chars, addClass(normalise(std::move(ranges), negated))});
        } else if (c == '.') {
            ++pos_;
            lastStart = out.size();
            hasLast = true;
            out.push_back({ElementKind::Chars, addClass(normalise({}, true))});
        } else if (isNameChar(c)) {
            const std::string name = parseName();
            lastStart = out.size();
            hasLast = true;
            out.push_back({ElementKind::Rule, ruleId(name, start)});
        } else if (c == '(') {
            if (depth + 1 > limits_.maxNesting)
                return err(start, fmt::format("groups nested more than {} deep", limits_.maxNesting));
            ++pos_;
            auto group = generatedRule(rule, start, false);
            if (!group) return false;
            skipSpace(true);
            if (!parseAlternatives(*group, true, depth + 1)) return false;
            skipSpace(true);
            if (peek() != ')') return err(start, "unclosed '(' (expected ')')");
            ++pos_;
            lastStart = out.size();
            hasLast = true;
            out.push_back({ElementKind::Rule, *group});
        } else if (c == '*' || c == '+' || c == '?' || c == '{') {
            if (!hasLast) return err(start, fmt::format("'{}' repeats nothing", c));
            ++pos_;
            uint32_t min = 0, max = 0;
            bool unbounded = false;
            if (c == '*') unbounded = true;
            else if (c == '+') min = 1, unbounded = true;
            else if (c == '?') max = 1;
            else if (!parseBounds(start, min, max, unbounded)) return false;
            if (!repeat(rule, out, lastStart, min, max, unbounded, start)) return false;
            hasLast = false;  // x** is not allowed, as in llama.cpp
        } else {
            return true;  // '|', ')', a newline, or something the caller reports
        }
    }
}

bool Parser::parseNumber(uint32_t& v) {
    const size_t start = pos_;
    uint64_t n = 0;
    while (peek() >= '0' && peek() <= '9') {
        n = n * 10 + uint64_t(peek() - '0');
        if (n > limits_.maxRepetition)
            return err(start, fmt::format("repetition bound above the limit of {}", limits_.maxRepetition));
        ++pos_;
    }
    if (pos_ == start) return err(start, "expected a number");
    v = uint32_t(n);
    return true;
}

bool Parser::parseBounds(size_t start, uint32_t& min, uint32_t& max, bool& unbounded) {
    skipSpace(false);
    if (!parseNumber(min)) return false;
    skipSpace(false);
    if (peek() == '}') {
        ++pos_;
        max = min;
        return true;
    }
    if (peek() != ',') return err(pos_, "expected ',' or '}' in a repetition");
    ++pos_;
    skipSpace(false);
    if (peek() == '}') {
        ++pos_;
        unbounded = true;
        return true;
    }
    if (!parseNumber(max)) return false;
    skipSpace(false);
    if (peek() != '}') return err(pos_, "expected '}' to close the repetition");
    ++pos_;
    if (max < min) return err(start, fmt::format("repetition {{{},{}}} has its maximum below its minimum", min, max));
    return true;
}

// Replaces out[lastStart, end) by its repetition.
bool Parser::repeat(uint32_t rule, Sequence& out, size_t lastStart, uint32_t min, uint32_t max, bool unbounded, size_t offset) {
    Element item;
    if (out.size() - lastStart == 1) {
        item = out.back();
    } else {  // a literal of several characters (or none): one rule for it
        auto wrap = generatedRule(rule, offset, false);
        if (!wrap) return false;
        if (!addAlternative(*wrap, Sequence(out.begin() + ptrdiff_t(lastStart), out.end()), offset)) return false;
        item = {ElementKind::Rule, *wrap};
    }
    out.resize(lastStart);
    if (!addElements(min, offset)) return false;
    out.insert(out.end(), min, item);
    if (unbounded) {
        auto loop = generatedRule(rule, offset, true);
        if (!loop) return false;
        if (!addAlternative(*loop, {item, {ElementKind::Rule, *loop}}, offset) || !addAlternative(*loop, {}, offset)) return false;
        out.push_back({ElementKind::Rule, *loop});
    } else if (max > min) {
        std::optional<uint32_t> inner;
        for (uint32_t i = min; i < max; ++i) {
            auto opt = generatedRule(rule, offset, true);
            if (!opt) return false;
            Sequence seq{item};
            if (inner) seq.push_back({ElementKind::Rule, *inner});
            if (!addAlternative(*opt, std::move(seq), offset) || !addAlternative(*opt, {}, offset)) return false;
            inner = opt;
        }
        out.push_back({ElementKind::Rule, *inner});
    }
    return true;
}

}  // namespace inferscope::grammar::gbnf_detail
