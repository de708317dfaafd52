#pragma once
// A structured-output constraint (record/structured_constraint.h) compiled to a grammar, and a
// finished text checked against it: whether the whole text is a sentence of the grammar, and if
// not, where it stops being one or that it ends too early. The same grammar the sampler masks with,
// so a local answer that ended by itself always passes; what fails is an answer cut off (max
// tokens, Stop) or a server's answer that did not keep to what it was asked.

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "common/error.h"
#include "grammar/gbnf.h"
#include "record/structured_constraint.h"

namespace inferscope::grammar {

// The grammar for `c` (null for Off); the schema's or the grammar's error otherwise. The last 8
// constraints compiled are kept (thread-safe): the same constraint again (a branch checked, then
// generated under it; every verdict of a conversation's answers) gives the same grammar without
// compiling it again. A grammar is immutable, so sharing it is safe.
Result<std::shared_ptr<const Grammar>> compileConstraint(const StructuredConstraint& c);

struct StructuredCheck {
    enum class Verdict : uint8_t {
        Valid,       // the whole text is a sentence of the grammar
        Refused,     // a byte the grammar does not allow, at `offset`
        Incomplete,  // every byte allowed, but the grammar needs more
        Unchecked,   // the constraint does not compile (its error in `error`), or it is too ambiguous to follow
    };
    Verdict verdict = Verdict::Unchecked;
    size_t offset = 0;  // Refused: the first byte refused
    std::string error;  // Unchecked: why
};

StructuredCheck checkStructured(const StructuredConstraint& c, std::string_view text);

}  // namespace inferscope::grammar
