// GBNF parser (see gbnf.h): recursive descent over the text, bounded by the nesting limit, with
// groups and repetitions lowered to generated rules as they are read; then the checks that need
// the whole grammar (undefined rules, root, left recursion).
#include "grammar/gbnf.h"

#include <algorithm>
#include <fmt/format.h>
#include <optional>
#include <unordered_map>

namespace inferscope::grammar {

bool CharClass::contains(uint32_t cp) const {
    if (cp < 128) return (ascii[cp >> 6] >> (cp & 63)) & 1;
    auto it = std::upper_bound(ranges.begin(), ranges.end(), cp, [](uint32_t c, const CharRange& r) { return c < r.lo; });
    return it != ranges.begin() && std::prev(it)->hi >= cp;
}

bool CharClass::intersects(uint32_t lo, uint32_t hi) const {
    for (const CharRange& r : ranges)
        if (r.lo <= hi && lo <= r.hi) return true;
    return false;
}

bool CharClass::covers(uint32_t lo, uint32_t hi) const {
    for (const CharRange& r : ranges)
        if (r.lo <= lo && hi <= r.hi) return true;
    return false;
}

namespace {

bool isNameChar(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
}

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

class Parser {
public:
    Parser(std::string_view text, const GbnfLimits& limits) : s_(text), limits_(limits) {}

    Result<Grammar> run() {
        if (s_.size() > limits_.maxTextBytes)
            return fail(ErrorKind::InvalidArgument, fmt::format("grammar of {} bytes, more than the limit of {}", s_.size(), limits_.maxTextBytes));
        if (!parseGrammar() || !finish()) return fail(ErrorKind::InvalidArgument, error_);
        return std::move(g_);
    }

private:
    using Sequence = std::vector<Element>;
    struct RuleInfo {
        bool defined = false;
        bool generated = false;
        bool repetition = false;
        size_t offset = 0;  // definition, or first reference while undefined
        std::vector<Sequence> alternatives;
    };

    // ---- errors -------------------------------------------------------------------------------
    std::pair<uint32_t, uint32_t> lineColumn(size_t offset) const {
        uint32_t line = 1, column = 1;
        for (size_t i = 0; i < offset && i < s_.size(); ++i) {
            if (s_[i] == '\n') {
                ++line;
                column = 1;
            } else if ((uint8_t(s_[i]) & 0xC0) != 0x80) {
                ++column;
            }
        }
        return {line, column};
    }
    bool err(size_t offset, std::string_view what) {
        if (error_.empty()) {
            auto [line, column] = lineColumn(offset);
            error_ = fmt::format("grammar line {}, column {}: {}", line, column, what);
        }
        return false;
    }

    // ---- lexing -------------------------------------------------------------------------------
    bool eof() const { return pos_ >= s_.size(); }
    char peek(size_t ahead = 0) const { return pos_ + ahead < s_.size() ? s_[pos_ + ahead] : '\0'; }
    void skipSpace(bool newlines) {
        while (!eof()) {
            const char c = peek();
            if (c == ' ' || c == '\t' || (newlines && (c == '\n' || c == '\r'))) {
                ++pos_;
            } else if (c == '#') {
                while (!eof() && peek() != '\n') ++pos_;
            } else if (c == '\r' && peek(1) == '\n' && newlines) {
                pos_ += 2;
            } else {
                break;
            }
        }
    }
    std::string parseName() {
        const size_t start = pos_;
        while (!eof() && isNameChar(peek())) ++pos_;
        return std::string(s_.substr(start, pos_ - start));
    }
    // One UTF-8 code point of the text.
    std::optional<uint32_t> decodeUtf8() {
        const size_t start = pos_;
        const uint8_t b = uint8_t(peek());
        int extra = b < 0x80 ? 0 : (b >> 5) == 6 ? 1 : (b >> 4) == 14 ? 2 : (b >> 3) == 30 ? 3 : -1;
        if (extra < 0) {
            err(start, "invalid UTF-8 in the grammar text");
            return std::nullopt;
        }
        uint32_t cp = extra == 0 ? b : b & (0x3F >> extra);
        ++pos_;
        for (int i = 0; i < extra; ++i) {
            if (eof() || (uint8_t(peek()) & 0xC0) != 0x80) {
                err(start, "invalid UTF-8 in the grammar text");
                return std::nullopt;
            }
            cp = (cp << 6) | (uint8_t(peek()) & 0x3F);
            ++pos_;
        }
        if (cp > kMaxCodePoint) {
            err(start, "invalid UTF-8 in the grammar text");
            return std::nullopt;
        }
        return cp;
    }
    std::optional<uint32_t> parseHex(size_t digits, size_t start) {
        uint32_t v = 0;
        for (size_t i = 0; i < digits; ++i) {
            const char c = peek();
            int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
            if (d < 0) {
                err(start, fmt::format("escape expects {} hexadecimal digits", digits));
                return std::nullopt;
            }
            v = v * 16 + uint32_t(d);
            ++pos_;
        }
        if (v > kMaxCodePoint) {
            err(start, fmt::format("escape names U+{:X}, past the last code point U+10FFFF", v));
            return std::nullopt;
        }
        return v;
    }
    // A character of a literal or class, escapes decoded.
    std::optional<uint32_t> parseChar() {
        if (eof()) {
            err(pos_, "unexpected end of the grammar");
            return std::nullopt;
        }
        if (peek() != '\\') return decodeUtf8();
        const size_t start = pos_;
        ++pos_;
        const char c = peek();
        ++pos_;
        switch (c) {
            case 'n': return '\n';
            case 'r': return '\r';
            case 't': return '\t';
            case '\\': case '"': case '[': case ']': case '-': return uint32_t(c);
            case 'x': return parseHex(2, start);
            case 'u': return parseHex(4, start);
            case 'U': return parseHex(8, start);
            default:
                err(start, c == '\0' ? std::string("unexpected end of the grammar after '\\'")
                                     : fmt::format("unknown escape '\\{}'", c));
                return std::nullopt;
        }
    }

    // ---- rules --------------------------------------------------------------------------------
    uint32_t ruleId(const std::string& name, size_t offset) {
        auto [it, added] = ids_.try_emplace(name, uint32_t(info_.size()));
        if (added) {
            info_.push_back(RuleInfo{});
            info_.back().offset = offset;
            g_.rules.push_back(GrammarRule{name, {}, 0, 0});
        }
        return it->second;
    }
    std::optional<uint32_t> generatedRule(uint32_t parent, size_t offset, bool repetition) {
        if (info_.size() >= limits_.maxRules) {
            err(offset, fmt::format("more than {} rules (groups and repetitions count)", limits_.maxRules));
            return std::nullopt;
        }
        const uint32_t id = uint32_t(info_.size());
        info_.push_back(RuleInfo{true, true, repetition, offset, {}});
        g_.rules.push_back(GrammarRule{fmt::format("{}-{}", g_.rules[parent].name, id), {}, 0, 0});
        return id;
    }
    bool addElements(size_t n, size_t offset) {
        elementCount_ += n;
        if (elementCount_ > limits_.maxElements)
            return err(offset, fmt::format("the grammar expands to more than {} elements", limits_.maxElements));
        return true;
    }
    bool addAlternative(uint32_t rule, Sequence seq, size_t offset) {
        if (!addElements(seq.size() + 1, offset)) return false;
        info_[rule].alternatives.push_back(std::move(seq));
        return true;
    }
    uint32_t addClass(CharClass c) {
        g_.classes.push_back(std::move(c));
        return uint32_t(g_.classes.size() - 1);
    }

    bool parseGrammar() {
        skipSpace(true);
        while (!eof()) {
            const size_t start = pos_;
            const std::string name = parseName();
            if (name.empty()) return err(start, fmt::format("expected a rule name, found '{}'", peek()));
            if (peek() == '<') return err(pos_, "token references (<...>) are not supported");
            const uint32_t id = ruleId(name, start);
            if (info_[id].defined) {
                auto [line, column] = lineColumn(info_[id].offset);
                return err(start, fmt::format("rule '{}' is defined twice (first at line {}, column {})", name, line, column));
            }
            info_[id].defined = true;
            info_[id].offset = start;
            skipSpace(false);
            if (s_.substr(pos_, 3) != "::=") return err(pos_, fmt::format("expected '::=' after the rule name '{}'", name));
            pos_ += 3;
            skipSpace(true);
            if (!parseAlternatives(id, false, 0)) return false;
            skipSpace(false);
            if (peek() == '\r') ++pos_;
            if (!eof() && peek() != '\n') return err(pos_, fmt::format("unexpected '{}'", peek()));
            skipSpace(true);
        }
        return true;
    }

    bool parseAlternatives(uint32_t rule, bool nested, uint32_t depth) {
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

    bool parseSequence(uint32_t rule, Sequence& out, bool nested, uint32_t depth) {
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

    bool parseNumber(uint32_t& v) {
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
    bool parseBounds(size_t start, uint32_t& min, uint32_t& max, bool& unbounded) {
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
    bool repeat(uint32_t rule, Sequence& out, size_t lastStart, uint32_t min, uint32_t max, bool unbounded, size_t offset) {
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

    // ---- whole-grammar checks and the flat form -----------------------------------------------
    bool finish() {
        for (size_t r = 0; r < info_.size(); ++r)
            if (!info_[r].defined)
                return err(info_[r].offset, fmt::format("rule '{}' is used but never defined", g_.rules[r].name));
        auto root = ids_.find("root");
        if (root == ids_.end() || !info_[root->second].defined) return err(s_.size(), "no rule named 'root'");
        g_.root = root->second;
        for (size_t r = 0; r < info_.size(); ++r) {
            auto [line, column] = lineColumn(info_[r].offset);
            g_.rules[r].line = line;
            g_.rules[r].column = column;
            for (Sequence& seq : info_[r].alternatives) {
                g_.rules[r].alternatives.push_back(uint32_t(g_.elements.size()));
                g_.elements.insert(g_.elements.end(), seq.begin(), seq.end());
                g_.elements.push_back({ElementKind::End, 0});
            }
            info_[r].alternatives.clear();
        }
        return checkLeftRecursion();
    }

    bool checkLeftRecursion() {
        const size_t n = g_.rules.size();
        std::vector<char> nullable(n, 0);
        for (bool changed = true; changed;) {
            changed = false;
            for (size_t r = 0; r < n; ++r) {
                if (nullable[r]) continue;
                for (uint32_t a : g_.rules[r].alternatives) {
                    uint32_t p = a;
                    while (g_.elements[p].kind == ElementKind::Rule && nullable[g_.elements[p].index]) ++p;
                    if (g_.elements[p].kind == ElementKind::End) {
                        nullable[r] = changed = true;
                        break;
                    }
                }
            }
        }
        // Edges r -> t where t can start r (after nullable rules only).
        std::vector<std::vector<uint32_t>> edges(n);
        for (size_t r = 0; r < n; ++r)
            for (uint32_t a : g_.rules[r].alternatives)
                for (uint32_t p = a; g_.elements[p].kind == ElementKind::Rule; ++p) {
                    edges[r].push_back(g_.elements[p].index);
                    if (!nullable[g_.elements[p].index]) break;
                }
        // Iterative depth-first search for a cycle.
        std::vector<uint8_t> colour(n, 0);  // 0 new, 1 on the path, 2 done
        std::vector<std::pair<uint32_t, size_t>> path;
        for (size_t start = 0; start < n; ++start) {
            if (colour[start]) continue;
            path.push_back({uint32_t(start), 0});
            colour[start] = 1;
            while (!path.empty()) {
                auto& [r, next] = path.back();
                if (next == edges[r].size()) {
                    colour[r] = 2;
                    path.pop_back();
                    continue;
                }
                const uint32_t t = edges[r][next++];
                if (colour[t] == 0) {
                    colour[t] = 1;
                    path.push_back({t, 0});
                } else if (colour[t] == 1) {
                    return reportCycle(path, t);
                }
            }
        }
        return true;
    }
    bool reportCycle(const std::vector<std::pair<uint32_t, size_t>>& path, uint32_t t) {
        size_t from = 0;
        while (path[from].first != t) ++from;
        for (size_t i = from; i < path.size(); ++i)
            if (info_[path[i].first].repetition)
                return err(info_[path[i].first].offset, "this repetition repeats something that can match nothing (left recursion)");
        uint32_t named = t;
        for (size_t i = from; i < path.size(); ++i)
            if (!info_[path[i].first].generated) {
                named = path[i].first;
                break;
            }
        return err(info_[named].offset, fmt::format("left recursion: rule '{}' can reach itself before matching any character",
                                                   g_.rules[named].name));
    }

    std::string_view s_;
    GbnfLimits limits_;
    size_t pos_ = 0;
    Grammar g_;
    std::unordered_map<std::string, uint32_t> ids_;
    std::vector<RuleInfo> info_;
    size_t elementCount_ = 0;
    std::string error_;
};

}  // namespace

Result<Grammar> parseGbnf(std::string_view text, const GbnfLimits& limits) { return Parser(text, limits).run(); }

}  // namespace inferscope::grammar
