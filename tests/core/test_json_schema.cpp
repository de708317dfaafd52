// JSON Schema -> GBNF: what each supported keyword admits and refuses, and the errors for what is
// outside the subset.
#include <gtest/gtest.h>

#include "grammar/gbnf.h"
#include "grammar/grammar_matcher.h"
#include "grammar/json_schema.h"

using namespace inferscope;
using namespace inferscope::grammar;

namespace {

std::shared_ptr<const Grammar> schemaGrammar(std::string_view schema) {
    auto text = jsonSchemaToGbnf(schema);
    EXPECT_TRUE(text) << (text ? "" : text.error().message);
    if (!text) return nullptr;
    auto g = parseGbnf(*text);
    EXPECT_TRUE(g) << g.error().message << "\n" << *text;
    return g ? std::make_shared<const Grammar>(std::move(*g)) : nullptr;
}

bool matches(const std::shared_ptr<const Grammar>& g, std::string_view text) {
    GrammarMatcher m(g);
    return m.acceptBytes(text).has_value() && m.isComplete();
}

std::string schemaError(std::string_view schema) {
    auto text = jsonSchemaToGbnf(schema);
    return text ? std::string("(converted)") : text.error().message;
}

}  // namespace

TEST(JsonSchema, ObjectWithRequiredOptionalAndNoAdditionalProperties) {
    auto g = schemaGrammar(R"({"type": "object", "properties": {
        "name": {"type": "string"}, "age": {"type": "integer"}, "email": {"type": "string"}},
        "required": ["name"], "additionalProperties": false})");
    ASSERT_TRUE(g);
    EXPECT_TRUE(matches(g, R"({"name": "Ada"})"));
    EXPECT_TRUE(matches(g, R"({"name": "Ada", "age": 36, "email": "a@b"})"));
    EXPECT_TRUE(matches(g, "{\n  \"name\": \"Ada\",\n  \"email\": \"a@b\"\n}"));
    EXPECT_FALSE(matches(g, R"({"age": 36})"));                 // name is required
    EXPECT_FALSE(matches(g, R"({"name": "Ada", "x": 1})"));     // no extra members
    EXPECT_FALSE(matches(g, R"({"name": "Ada", "age": 3.5})")); // an integer
    EXPECT_FALSE(matches(g, R"({"email": "a@b", "name": "Ada"})"));  // declared order
}

TEST(JsonSchema, AdditionalPropertiesAllowedByDefaultOrBySchema) {
    auto any = schemaGrammar(R"({"type": "object", "properties": {"a": {"type": "boolean"}}})");
    ASSERT_TRUE(any);
    EXPECT_TRUE(matches(any, R"({})"));
    EXPECT_TRUE(matches(any, R"({"a": true, "zz": [1, {"q": null}]})"));
    EXPECT_TRUE(matches(any, R"({"zz": 1})"));
    auto numbers = schemaGrammar(R"({"type": "object", "additionalProperties": {"type": "number"}})");
    ASSERT_TRUE(numbers);
    EXPECT_TRUE(matches(numbers, R"({"x": 1.5, "y": -2})"));
    EXPECT_FALSE(matches(numbers, R"({"x": "1"})"));
}

TEST(JsonSchema, ArraysWithItemBounds) {
    auto g = schemaGrammar(R"({"type": "array", "items": {"type": "number"}, "minItems": 2, "maxItems": 3})");
    ASSERT_TRUE(g);
    EXPECT_FALSE(matches(g, "[1]"));
    EXPECT_TRUE(matches(g, "[1, 2]"));
    EXPECT_TRUE(matches(g, "[1, 2e5, -0.5]"));
    EXPECT_FALSE(matches(g, "[1, 2, 3, 4]"));
    EXPECT_FALSE(matches(g, "[1, \"2\"]"));
    auto open = schemaGrammar(R"({"type": "array"})");
    EXPECT_TRUE(matches(open, "[]"));
    EXPECT_TRUE(matches(open, R"([1, "a", {"b": [null]}])"));
}

TEST(JsonSchema, EnumConstTypesAndFormats) {
    auto e = schemaGrammar(R"({"enum": ["red", 1, null, {"a": "b"}]})");
    EXPECT_TRUE(matches(e, "\"red\""));
    EXPECT_TRUE(matches(e, "1"));
    EXPECT_TRUE(matches(e, "null"));
    EXPECT_TRUE(matches(e, R"({"a":"b"})"));
    EXPECT_FALSE(matches(e, "\"blue\""));
    auto c = schemaGrammar(R"({"const": "x\"y"})");
    EXPECT_TRUE(matches(c, R"("x\"y")"));
    auto t = schemaGrammar(R"({"type": ["string", "null"]})");
    EXPECT_TRUE(matches(t, "null"));
    EXPECT_TRUE(matches(t, "\"s\""));
    EXPECT_FALSE(matches(t, "1"));
    auto d = schemaGrammar(R"({"type": "object", "properties": {"d": {"type": "string", "format": "date"},
        "t": {"type": "string", "format": "time"}, "dt": {"type": "string", "format": "date-time"},
        "u": {"type": "string", "format": "uuid"}}, "required": ["d", "t", "dt", "u"]})");
    EXPECT_TRUE(matches(d, R"({"d": "2026-12-05", "t": "03:04:05Z", "dt": "2026-12-05T03:04:05.123+01:00",
        "u": "123e4567-e89b-12d3-a456-426614174000"})"));
    EXPECT_FALSE(matches(d, R"({"d": "2026-13-05", "t": "03:04:05Z", "dt": "2026-12-05T03:04:05Z", "u": "123e4567-e89b-12d3-a456-426614174000"})"));
    EXPECT_FALSE(matches(d, R"({"d": "2026-12-05", "t": "03:04:05Z", "dt": "2026-12-05T03:04:05Z", "u": "123e4567"})"));
    auto s = schemaGrammar(R"({"type": "string", "minLength": 2, "maxLength": 3})");
    EXPECT_FALSE(matches(s, "\"a\""));
    EXPECT_TRUE(matches(s, "\"ab\""));
    EXPECT_TRUE(matches(s, "\"a\\nb\""));  // an escape is one character
    EXPECT_FALSE(matches(s, "\"abcd\""));
}

TEST(JsonSchema, RefsToDefsAnyOfAndRecursion) {
    auto g = schemaGrammar(R"({"$defs": {"node": {"type": "object", "properties": {
        "v": {"type": "integer"}, "kids": {"type": "array", "items": {"$ref": "#/$defs/node"}}},
        "required": ["v"], "additionalProperties": false}},
        "anyOf": [{"$ref": "#/$defs/node"}, {"type": "boolean"}]})");
    ASSERT_TRUE(g);
    EXPECT_TRUE(matches(g, "true"));
    EXPECT_TRUE(matches(g, R"({"v": 1, "kids": [{"v": 2}, {"v": 3, "kids": []}]})"));
    EXPECT_FALSE(matches(g, R"({"v": 1, "kids": [{"w": 2}]})"));
    auto old = schemaGrammar(R"({"definitions": {"a": {"type": "null"}}, "oneOf": [{"$ref": "#/definitions/a"}, {"type": "integer"}]})");
    EXPECT_TRUE(matches(old, "null"));
    EXPECT_TRUE(matches(old, "7"));
}

TEST(JsonSchema, GenericJsonObjectGrammar) {
    auto g = parseGbnf(jsonObjectGbnf());
    ASSERT_TRUE(g) << g.error().message;
    auto shared = std::make_shared<const Grammar>(std::move(*g));
    EXPECT_TRUE(matches(shared, R"({"a": [1, 2, {"b": "c"}], "d": false})"));
    EXPECT_FALSE(matches(shared, "[1]"));
}

TEST(JsonSchema, OutsideTheSubsetIsRefusedByName) {
    EXPECT_EQ(schemaError(R"({"type": "string", "pattern": "^a+$"})"), "JSON schema at /: 'pattern' is not supported");
    EXPECT_EQ(schemaError(R"({"properties": {"a": {"allOf": []}}})"), "JSON schema at /properties/a: 'allOf' is not supported");
    EXPECT_EQ(schemaError(R"({"type": "tuple"})"), "JSON schema at /: unknown type 'tuple'");
    EXPECT_EQ(schemaError(R"({"$ref": "http://x/y"})"),
              "JSON schema at /: $ref 'http://x/y' is not '#', '#/$defs/NAME' or '#/definitions/NAME' of this schema");
    EXPECT_EQ(schemaError(R"({"type": "array", "maxItems": 5000})"), "JSON schema at /: maxItems 5000 is above the limit of 1000");
    EXPECT_EQ(schemaError(R"({"type": "object", "required": ["a"]})"), "JSON schema at /: required property 'a' is not in properties");
    EXPECT_EQ(schemaError("{\"type\": "), "JSON schema: not valid JSON");
    EXPECT_EQ(schemaError(std::string(100, '[') + std::string(100, ']')),
              "JSON schema: the schema nests JSON arrays and objects deeper than 64 levels");
    EXPECT_EQ(schemaError(R"({"$defs": {"a": {"$ref": "#/$defs/a"}}, "$ref": "#/$defs/a"})"),
              "JSON schema: grammar line 2, column 1: left recursion: rule 's-ref--defs-a' can reach itself before "
              "matching any character");
}
