// GBNF parser (see gbnf.h): recursive descent over the text, bounded by the nesting limit, with
// groups and repetitions lowered to generated rules as they are read; then the checks that need
// the whole grammar (undefined rules, root, left recursion). This file holds the entry point and
// the text itself: character classes, lexing (escapes, UTF-8) and the messages that point into
// the text; the syntax is in gbnf_syntax.cpp, the whole-grammar checks in gbnf_checks.cpp.
#include "grammar/gbnf.h"

#include <algorithm>
#include <fmt/format.h>
#include <optional>

#include "grammar/gbnf_parse.h"

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

namespace gbnf_detail {

Result<Grammar> Parser::run() {
    if (s_.size() > limits_.maxTextBytes)
        return fail(ErrorKind::InvalidArgument, fmt::format("grammar of {} bytes, more than the limit of {}", s_.size(), limits_.maxTextBytes));
    if (!parseGrammar() || !finish()) return fail(ErrorKind::InvalidArgument, error_);
    return std::move(g_);
}

// ---- errors ---------------------------------------------------------------------------------

std::pair<uint32_t, uint32_t> Parser::lineColumn(size_t offset) const {
    offset = std::min(offset, s_.size());
    if (charsBefore_.empty()) {
        charsBefore_.resize(s_.size() + 1);
        uint32_t chars = 0;
        lineStarts_.push_back(0);
        for (size_t i = 0; i < s_.size(); ++i) {
            charsBefore_[i] = chars;
            if ((uint8_t(s_[i]) & 0xC0) != 0x80) ++chars;
            if (s_[i] == '\n') lineStarts_.push_back(i + 1);
        }
        charsBefore_[s_.size()] = chars;
    }
    const size_t line = size_t(std::upper_bound(lineStarts_.begin(), lineStarts_.end(), offset) - lineStarts_.begin());
    return {uint32_t(line), charsBefore_[offset] - charsBefore_[lineStarts_[line - 1]] + 1};
}

bool Parser::err(size_t offset, std::string_view what) {
    if (error_.empty()) {
        auto [line, column] = lineColumn(offset);
        error_ = fmt::format("grammar line {}, column {}: {}", line, column, what);
    }
    return false;
}

std::string Parser::shownChar(char c, bool escape) const {
    if (c == '\0' && eof()) return "the end of the grammar";
    if (!limits_.quoteInput) return "character";
    if (uint8_t(c) > 0x20 && uint8_t(c) < 0x7F) return fmt::format("'{}{}'", escape ? "\\" : "", c);
    return fmt::format("byte 0x{:02X}", uint8_t(c));
}

std::string Parser::shownRule(const std::string& name) const {
    return limits_.quoteInput ? fmt::format("rule '{}'", name) : std::string("a rule");
}

// ---- lexing ---------------------------------------------------------------------------------

void Parser::skipSpace(bool newlines) {
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

std::string Parser::parseName() {
    const size_t start = pos_;
    while (!eof() && isNameChar(peek())) ++pos_;
    return std::string(s_.substr(start, pos_ - start));
}

// One UTF-8 code point of the text.
std::optional<uint32_t> Parser::decodeUtf8() {
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

std::optional<uint32_t> Parser::parseHex(size_t digits, size_t start) {
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
std::optional<uint32_t> Parser::parseChar() {
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
                                 : "unknown escape " + shownChar(c, true));
            return std::nullopt;
    }
}

}  // namespace gbnf_detail

Result<Grammar> parseGbnf(std::string_view text, const GbnfLimits& limits) { return gbnf_detail::Parser(text, limits).run(); }

}  // namespace inferscope::grammar
