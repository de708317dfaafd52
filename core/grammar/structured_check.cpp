#include "grammar/structured_check.h"

#include <deque>
#include <mutex>

#include "grammar/grammar_matcher.h"
#include "grammar/json_schema.h"

namespace inferscope::grammar {

namespace {

Result<std::shared_ptr<const Grammar>> compileUncached(const StructuredConstraint& c) {
    Result<std::string> gbnf = std::string();
    switch (c.kind) {
        case StructuredKind::Off: return std::shared_ptr<const Grammar>();
        case StructuredKind::Json: gbnf = jsonObjectGbnf(); break;
        case StructuredKind::JsonSchema: gbnf = jsonSchemaToGbnf(c.text); break;
        case StructuredKind::Gbnf: gbnf = c.text; break;
    }
    if (!gbnf) return std::unexpected(gbnf.error());
    auto g = parseGbnf(*gbnf);
    if (!g) return std::unexpected(g.error());
    return std::make_shared<const Grammar>(std::move(*g));
}

struct Compiled {
    StructuredConstraint constraint;
    Result<std::shared_ptr<const Grammar>> grammar;
};

}  // namespace

Result<std::shared_ptr<const Grammar>> compileConstraint(const StructuredConstraint& c) {
    if (c.kind == StructuredKind::Off) return std::shared_ptr<const Grammar>();
    static std::mutex mutex;
    static std::deque<Compiled> recent;  // most recent first
    constexpr size_t kKept = 8;
    {
        std::lock_guard lock(mutex);
        for (auto it = recent.begin(); it != recent.end(); ++it)
            if (it->constraint == c) {
                Compiled hit = std::move(*it);
                recent.erase(it);
                recent.push_front(std::move(hit));
                return recent.front().grammar;
            }
    }
    auto compiled = compileUncached(c);  // outside the lock: a large schema takes a while
    std::lock_guard lock(mutex);
    recent.push_front({c, compiled});
    if (recent.size() > kKept) recent.pop_back();
    return compiled;
}

StructuredCheck checkStructured(const StructuredConstraint& c, std::string_view text) {
    StructuredCheck r;
    auto g = compileConstraint(c);
    if (!g || !*g) {
        r.error = g ? "no constraint" : g.error().message;
        return r;
    }
    GrammarMatcher m(*g);
    // Byte by byte, to name the first one refused (the matcher's own error counts within a call).
    for (size_t i = 0; i < text.size(); ++i) {
        if (!m.acceptBytes(text.substr(i, 1))) {
            if (m.overflowed()) {
                r.error = "the grammar is too ambiguous to follow";
                return r;
            }
            r.verdict = StructuredCheck::Verdict::Refused;
            r.offset = i;
            return r;
        }
    }
    r.verdict = m.isComplete() ? StructuredCheck::Verdict::Valid : StructuredCheck::Verdict::Incomplete;
    return r;
}

}  // namespace inferscope::grammar
