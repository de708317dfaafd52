// A finished text checked against the structured-output constraint it was asked to keep: valid,
// refused at a named byte, cut off before the grammar ends, or not checkable (a constraint that
// does not compile); and the kinds' stored names.
#include <gtest/gtest.h>

#include "grammar/structured_check.h"

using namespace inferscope;
using namespace inferscope::grammar;
using Verdict = StructuredCheck::Verdict;

namespace {

const StructuredConstraint kSchema{StructuredKind::JsonSchema,
                                   R"({"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"], "additionalProperties": false})"};

TEST(StructuredCheck, ASchemasAnswer) {
    EXPECT_EQ(checkStructured(kSchema, R"({"ok": true})").verdict, Verdict::Valid);
    EXPECT_EQ(checkStructured(kSchema, R"({"ok": true)").verdict, Verdict::Incomplete);
    const StructuredCheck wrongType = checkStructured(kSchema, R"({"ok": "yes"})");
    EXPECT_EQ(wrongType.verdict, Verdict::Refused);
    EXPECT_EQ(wrongType.offset, 7u);  // the '"' where a boolean must start
    const StructuredCheck extraKey = checkStructured(kSchema, R"({"ok": true, "more": 1})");
    EXPECT_EQ(extraKey.verdict, Verdict::Refused);
    EXPECT_EQ(extraKey.offset, 11u);  // the ',' after the only property allowed
    EXPECT_EQ(checkStructured(kSchema, "").verdict, Verdict::Incomplete);
}

TEST(StructuredCheck, AnyJsonObject) {
    const StructuredConstraint json{StructuredKind::Json, {}};
    EXPECT_EQ(checkStructured(json, R"({"a": [1, 2.5, null], "b": {"c": "ü"}})").verdict, Verdict::Valid);
    EXPECT_EQ(checkStructured(json, "[1]").verdict, Verdict::Refused);  // an object, not an array
    EXPECT_EQ(checkStructured(json, R"({"a": "unterminated)").verdict, Verdict::Incomplete);
}

TEST(StructuredCheck, AGrammar) {
    const StructuredConstraint yesNo{StructuredKind::Gbnf, "root ::= answer \".\"\nanswer ::= \"yes\" | \"no\""};
    EXPECT_EQ(checkStructured(yesNo, "yes.").verdict, Verdict::Valid);
    EXPECT_EQ(checkStructured(yesNo, "no").verdict, Verdict::Incomplete);
    const StructuredCheck maybe = checkStructured(yesNo, "maybe.");
    EXPECT_EQ(maybe.verdict, Verdict::Refused);
    EXPECT_EQ(maybe.offset, 0u);
    const StructuredCheck after = checkStructured(yesNo, "yes. And more");
    EXPECT_EQ(after.verdict, Verdict::Refused);
    EXPECT_EQ(after.offset, 4u);
}

TEST(StructuredCheck, AConstraintThatDoesNotCompileIsNotChecked) {
    const StructuredCheck broken = checkStructured({StructuredKind::Gbnf, "root ::= nothing"}, "anything");
    EXPECT_EQ(broken.verdict, Verdict::Unchecked);
    EXPECT_NE(broken.error.find("nothing"), std::string::npos) << broken.error;
    EXPECT_EQ(checkStructured({}, "anything").verdict, Verdict::Unchecked);  // Off: nothing to check
    EXPECT_FALSE(compileConstraint({}).value());
    EXPECT_TRUE(compileConstraint(kSchema).value());
}

// A branch is checked under its constraint and then generated under it, and every answer's verdict
// compiles its constraint: the same constraint gives the same grammar, compiled once, until eight
// others have been compiled since.
TEST(StructuredCheck, TheSameConstraintIsCompiledOnce) {
    const auto first = compileConstraint(kSchema).value();
    EXPECT_EQ(compileConstraint(kSchema).value(), first);
    const StructuredConstraint other{StructuredKind::Gbnf, "root ::= \"a\""};
    EXPECT_NE(compileConstraint(other).value(), first);
    EXPECT_EQ(compileConstraint(kSchema).value(), first);
    for (int i = 0; i < 8; ++i) ASSERT_TRUE(compileConstraint({StructuredKind::Gbnf, "root ::= \"" + std::to_string(i) + "\""}));
    const auto again = compileConstraint(kSchema).value();
    EXPECT_NE(again, first);  // pushed out, compiled anew: the same grammar
    EXPECT_EQ(checkStructured(kSchema, R"({"ok": true})").verdict, checkStructured(kSchema, R"({"ok": true})").verdict);
    const auto broken = compileConstraint({StructuredKind::Gbnf, "root ::= nothing"});
    ASSERT_FALSE(broken);
    EXPECT_EQ(compileConstraint({StructuredKind::Gbnf, "root ::= nothing"}).error().message, broken.error().message);
}

TEST(StructuredCheck, KindNamesRoundTrip) {
    for (StructuredKind k : {StructuredKind::Off, StructuredKind::Json, StructuredKind::JsonSchema, StructuredKind::Gbnf})
        EXPECT_EQ(structuredKindFromName(structuredKindName(k)), k);
    EXPECT_EQ(structuredKindFromName("yaml"), StructuredKind::Off);
}

}  // namespace
