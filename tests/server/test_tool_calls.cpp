// server/: tools on chat completions without sockets: the request's tools and tool messages, the
// prompt each template family renders, the calls' grammar, and the calls parsed out of answers.
#include <gtest/gtest.h>

#include "grammar/gbnf.h"
#include "grammar/grammar_matcher.h"
#include "server/openai_request.h"
#include "server/openai_tool_response.h"
#include "server/tool_format.h"

using namespace inferscope;
using namespace inferscope::server;

namespace {

constexpr std::string_view kWeather =
    R"({"type":"function","function":{"name":"get_weather","description":"The weather in a city","parameters":{"type":"object","properties":{"city":{"type":"string","enum":["Paris","Oslo"]},"days":{"type":"integer"}},"required":["city","days"],"additionalProperties":false}}})";
constexpr std::string_view kTime = R"({"type":"function","function":{"name":"get_time","parameters":{"type":"object","properties":{}}}})";

std::string chatWith(std::string_view extra, std::string_view messages = R"([{"role":"user","content":"Weather?"}])") {
    return "{\"messages\":" + std::string(messages) + "," + std::string(extra) + "}";
}
std::string toolsField(std::string_view choice = {}) {
    std::string f = "\"tools\":[" + std::string(kWeather) + "," + std::string(kTime) + "]";
    if (!choice.empty()) f += ",\"tool_choice\":" + std::string(choice);
    return f;
}
ServeRequest parsed(const std::string& body) {
    auto r = parseServeRequest(body, Endpoint::Chat);
    EXPECT_TRUE(r.has_value()) << body << ": " << (r ? "" : r.error().message);
    return r ? *r : ServeRequest{};
}
ApiError refusal(const std::string& body) {
    auto r = parseServeRequest(body, Endpoint::Chat);
    EXPECT_FALSE(r.has_value()) << body.substr(0, 200);
    return r ? ApiError{} : r.error();
}
// Whether the grammar of `syntax` for request `r` accepts `text` whole.
bool grammarAccepts(ToolSyntax syntax, const ServeRequest& r, std::string_view text) {
    auto g = grammar::parseGbnf(toolCallGbnf(syntax, r));
    EXPECT_TRUE(g.has_value()) << (g ? "" : g.error().message) << "\n" << toolCallGbnf(syntax, r);
    if (!g) return false;
    grammar::GrammarMatcher m(std::make_shared<const grammar::Grammar>(std::move(*g)));
    return m.acceptBytes(text).has_value() && m.isComplete();
}

}  // namespace

TEST(ToolRequest, ToolsAndChoicesAreRead) {
    ServeRequest r = parsed(chatWith(toolsField()));
    ASSERT_EQ(r.tools.size(), 2u);
    EXPECT_EQ(r.tools[0].name, "get_weather");
    EXPECT_EQ(r.toolChoice, ToolChoice::Auto);  // OpenAI's default with tools
    // The declaration keeps the members in the order written.
    EXPECT_EQ(r.tools[0].declaration.dump(),
              R"({"type":"function","function":{"name":"get_weather","description":"The weather in a city","parameters":{"type":"object","properties":{"city":{"type":"string","enum":["Paris","Oslo"]},"days":{"type":"integer"}},"required":["city","days"],"additionalProperties":false}}})");
    EXPECT_EQ(parsed(chatWith(toolsField(R"("required")"))).toolChoice, ToolChoice::Required);
    EXPECT_EQ(parsed(chatWith(toolsField(R"("none")"))).toolChoice, ToolChoice::None);
    r = parsed(chatWith(toolsField(R"({"type":"function","function":{"name":"get_time"}})") + R"(,"parallel_tool_calls":false)"));
    EXPECT_EQ(r.toolChoice, ToolChoice::Named);
    EXPECT_EQ(r.toolChoiceName, "get_time");
    EXPECT_FALSE(r.parallelToolCalls);
    EXPECT_EQ(parsed(chatWith(R"("tools":[],"tool_choice":"none")")).toolChoice, ToolChoice::None);
}

TEST(ToolRequest, ToolMessagesAreRead) {
    const ServeRequest r = parsed(chatWith(toolsField(), R"([{"role":"user","content":"Weather?"},
        {"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Oslo\",\"days\":1}"}}]},
        {"role":"tool","tool_call_id":"call_1","content":"-3 C"}])"));
    ASSERT_EQ(r.messages.size(), 3u);
    ASSERT_EQ(r.messages[1].toolCalls.size(), 1u);
    EXPECT_EQ(r.messages[1].toolCalls[0].id, "call_1");
    EXPECT_EQ(r.messages[1].toolCalls[0].arguments, R"({"city":"Oslo","days":1})");
    EXPECT_TRUE(r.messages[2].toolResult);
    EXPECT_EQ(r.messages[2].toolCallId, "call_1");
    EXPECT_EQ(r.messages[2].content, "-3 C");
    EXPECT_FALSE(r.continueFinalMessage);
    EXPECT_TRUE(r.hasToolMessages());
}

TEST(ToolRequest, BadToolsAreRefusedWithExactErrors) {
    auto expectError = [](const std::string& body, const std::string& param, const std::string& message) {
        const ApiError e = refusal(body);
        EXPECT_EQ(e.status, 400) << body.substr(0, 200);
        EXPECT_EQ(e.param, param) << body.substr(0, 200);
        EXPECT_EQ(e.message, message) << body.substr(0, 200);
    };
    const std::string shape = R"(must be {"type": "function", "function": {"name", "description", "parameters"}})";
    expectError(chatWith(R"("tools":{"a":1})"), "tools", "tools must be an array of at most 128 functions, each " + shape);
    expectError(chatWith(R"("tools":[1])"), "tools", "tools[0] " + shape);
    expectError(chatWith(R"("tools":[{"type":"function","function":{"name":"a b"}}])"), "tools",
                "tools[0].function.name must be 1 to 64 letters, digits, '_' or '-'");
    expectError(chatWith(R"("tools":[{"type":"function","function":{"name":")" + std::string(65, 'a') + "\"}}]"), "tools",
                "tools[0].function.name must be 1 to 64 letters, digits, '_' or '-'");
    expectError(chatWith(R"("tools":[{"type":"function","function":{"name":"f"}},{"type":"function","function":{"name":"f"}}])"), "tools",
                "tools[1].function.name is given twice");
    expectError(chatWith(R"("tools":[{"type":"function","function":{"name":"f","parameters":[1]}}])"), "tools",
                "tools[0].function.parameters must be a JSON schema (an object)");
    expectError(chatWith(R"("tools":[{"type":"function","function":{"name":"f","parameters":{"allOf":[]}}}])"), "tools",
                "tools[0].function.parameters: JSON schema at /: 'allOf' is not supported");
    expectError(chatWith(toolsField(R"("sometimes")")), "tool_choice",
                R"(tool_choice must be none, auto, required or {"type": "function", "function": {"name"}})");
    expectError(chatWith(toolsField(R"({"type":"function","function":{"name":"nope"}})")), "tool_choice",
                "tool_choice names a function that is not in tools");
    expectError(chatWith(R"("tool_choice":"required")"), "tool_choice", "tool_choice other than none needs tools");
    expectError(chatWith(toolsField() + R"(,"response_format":{"type":"json_object"})"), "tools",
                "tools cannot be combined with response_format, grammar or json_schema; give one");
    expectError(chatWith(toolsField(), R"([{"role":"tool","content":"x"}])"), "messages[0].tool_call_id",
                "messages[0].tool_call_id must be a string of 1 to 256 bytes");
    expectError(chatWith(toolsField(), R"([{"role":"user","content":"x","tool_calls":[]}])"), "messages[0].tool_calls",
                "messages[0].tool_calls is only for assistant messages");
    expectError(chatWith(toolsField(), R"([{"role":"assistant","tool_calls":[{"function":{"name":"f","arguments":{}}}]}])"),
                "messages[0].tool_calls", "messages[0].tool_calls[0].function.arguments must be a string of JSON");
    // Tools are the chat endpoint's; the legacy endpoint refuses them by name.
    EXPECT_EQ(parseServeRequest(R"({"prompt":"a","tools":[{"type":"function","function":{"name":"f"}}]})", Endpoint::Completion).error().param,
              "tools");
}

TEST(ToolRequest, HostileToolsAreBounded) {
    auto expectError = [](const std::string& body, const std::string& message, const std::string& code = {}) {
        const ApiError e = refusal(body);
        EXPECT_EQ(e.status, 400);
        EXPECT_EQ(e.message, message);
        EXPECT_EQ(e.code, code);
    };
    // Many functions: 128 pass, 129 do not.
    auto many = [](size_t n) {
        std::string tools = "\"tools\":[";
        for (size_t i = 0; i < n; ++i) tools += (i ? "," : "") + std::string(R"({"type":"function","function":{"name":"f)") + std::to_string(i) + "\"}}";
        return tools + "]";
    };
    EXPECT_EQ(parsed(chatWith(many(128))).tools.size(), 128u);
    expectError(chatWith(many(129)),
                R"(tools must be an array of at most 128 functions, each must be {"type": "function", "function": {"name", "description", "parameters"}})");
    // Huge: one tool past 64 KiB, a description past 16 KiB, all the tools past 256 KiB.
    const std::string bigEnum = [] {
        std::string e;
        for (int i = 0; i < 9000; ++i) e += (i ? "," : "") + std::string("\"v") + std::to_string(i) + "\"";
        return e;
    }();
    expectError(chatWith(R"("tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object","properties":{"a":{"enum":[)" +
                         bigEnum + "]}}}}}]"),
                "tools[0] is larger than 65536 bytes");
    expectError(chatWith(R"("tools":[{"type":"function","function":{"name":"f","description":")" + std::string(16385, 'd') + "\"}}]"),
                "tools[0].function.description must be a string of at most 16384 bytes");
    std::string wide = "\"tools\":[";
    for (int i = 0; i < 20; ++i)
        wide += (i ? "," : "") + std::string(R"({"type":"function","function":{"name":"f)") + std::to_string(i) + R"(","description":")" +
                std::string(15000, 'd') + "\"}}";
    expectError(chatWith(wide + "]"), "tools is larger than 262144 bytes");
    // Deep: a parameters schema nested past the body's depth limit is refused before it is parsed.
    std::string deep = R"({"type":"object","properties":{"a":)";
    for (int i = 0; i < 70; ++i) deep += R"({"type":"array","items":)";
    deep += "{}";
    for (int i = 0; i < 70; ++i) deep += "}";
    deep += "}}";
    expectError(chatWith(R"("tools":[{"type":"function","function":{"name":"f","parameters":)" + deep + "}}]"),
                "the request body nests JSON arrays and objects deeper than 64 levels", "invalid_json");
}

TEST(ToolRequest, RefusalsRepeatNothingTheClientSent) {
    for (const std::string f : {R"("tools":[{"type":"function","function":{"name":"ZQX marker"}}])",
                                R"("tools":[{"type":"function","function":{"name":"f","parameters":{"properties":{"ZQX-marker":{"allOf":[]}}}}}])",
                                R"("tools":[{"type":"ZQX-marker"}])", R"("tool_choice":"ZQX-marker")",
                                R"("tools":[{"type":"function","function":{"name":"f"}}],"tool_choice":{"type":"function","function":{"name":"ZQX"}}})"}) {
        const auto e = parseServeRequest(chatWith(f), Endpoint::Chat);
        ASSERT_FALSE(e) << f;
        EXPECT_EQ(e.error().message.find("ZQX"), std::string::npos) << e.error().message;
    }
}

namespace {

// A conversation with one round of tools: a call and its result, the answer to come.
ServeRequest roundTrip() {
    return parsed(chatWith("\"tools\":[" + std::string(kWeather) + "]", R"([{"role":"system","content":"Be brief."},
        {"role":"user","content":"Weather in Oslo?"},
        {"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Oslo\",\"days\":1}"}}]},
        {"role":"tool","tool_call_id":"call_1","content":"-3 C"}])"));
}
const std::string kWeatherPython =
    R"({"type": "function", "function": {"name": "get_weather", "description": "The weather in a city", "parameters": {"type": "object", )"
    R"("properties": {"city": {"type": "string", "enum": ["Paris", "Oslo"]}, "days": {"type": "integer"}}, "required": ["city", "days"], )"
    R"("additionalProperties": false}}})";

}  // namespace

TEST(ToolPrompt, JsonIsWrittenAsTheTemplatesTojsonWritesIt) {
    const auto v = nlohmann::ordered_json::parse(R"({"a":[1,{"b":null}],"c":"é","d":{},"e":[]})");
    EXPECT_EQ(pythonJson(v), R"({"a": [1, {"b": null}], "c": "é", "d": {}, "e": []})");
    EXPECT_EQ(pythonJson(v, 4), "{\n    \"a\": [\n        1,\n        {\n            \"b\": null\n        }\n    ],\n    \"c\": \"é\",\n"
                                "    \"d\": {},\n    \"e\": []\n}");
}

TEST(ToolPrompt, QwenChatMlListsToolsInTheSystemMessage) {
    EXPECT_EQ(toolPromptText(roundTrip(), ChatTemplate{ChatTemplateKind::ChatML}),
              "<|im_start|>system\nBe brief.\n\n# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
              "You are provided with function signatures within <tools></tools> XML tags:\n<tools>\n" + kWeatherPython +
              "\n</tools>\n\nFor each function call, return a json object with function name and arguments within <tool_call></tool_call> "
              "XML tags:\n<tool_call>\n{\"name\": <function-name>, \"arguments\": <args-json-object>}\n</tool_call><|im_end|>\n"
              "<|im_start|>user\nWeather in Oslo?<|im_end|>\n"
              "<|im_start|>assistant\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\", \"days\": 1}}\n</tool_call><|im_end|>\n"
              "<|im_start|>user\n<tool_response>\n-3 C\n</tool_response><|im_end|>\n<|im_start|>assistant\n");
}

TEST(ToolPrompt, Llama3PutsToolsInTheFirstUserMessageAndResultsInIpython) {
    const ServeRequest r = roundTrip();
    EXPECT_EQ(toolPromptText(r, ChatTemplate{ChatTemplateKind::Llama3}),
              "<|start_header_id|>system<|end_header_id|>\n\nEnvironment: ipython\nCutting Knowledge Date: December 2023\n"
              "Today Date: 26 Jul 2024\n\nBe brief.<|eot_id|><|start_header_id|>user<|end_header_id|>\n\n"
              "Given the following functions, please respond with a JSON for a function call with its proper arguments that best answers "
              "the given prompt.\n\nRespond in the format {\"name\": function name, \"parameters\": dictionary of argument name and its "
              "value}.Do not use variables.\n\n" + pythonJson(r.tools[0].declaration, 4) + "\n\nWeather in Oslo?<|eot_id|>"
              "<|start_header_id|>assistant<|end_header_id|>\n\n{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Oslo\", \"days\": 1}}<|eot_id|>"
              "<|start_header_id|>ipython<|end_header_id|>\n\n-3 C<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n");
}

TEST(ToolPrompt, MistralListsAvailableToolsBeforeTheLastUserMessage) {
    EXPECT_EQ(toolPromptText(roundTrip(), ChatTemplate{ChatTemplateKind::Mistral}),
              "<s>[AVAILABLE_TOOLS] [" + kWeatherPython + "][/AVAILABLE_TOOLS][INST] Be brief.\n\nWeather in Oslo? [/INST]"
              "[TOOL_CALLS] [{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\", \"days\": 1}, \"id\": \"call_1\"}]</s>"
              "[TOOL_RESULTS] {\"content\": -3 C, \"call_id\": \"call_1\"}[/TOOL_RESULTS]");
}

TEST(ToolPrompt, OtherTemplatesGetTheGenericJsonInstruction) {
    EXPECT_EQ(toolPromptText(roundTrip(), ChatTemplate{ChatTemplateKind::Phi3}),
              "<|system|>\nBe brief.\n\nYou may call these functions, declared as JSON:\n" + kWeatherPython +
              "\nTo call one or more of them, answer with only this JSON object and nothing else: {\"tool_calls\": [{\"name\": <function "
              "name>, \"arguments\": <arguments object>}]}. Otherwise answer in plain text.<|end|>\n<|user|>\nWeather in Oslo?<|end|>\n"
              "<|assistant|>\n{\"tool_calls\": [{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\", \"days\": 1}}]}<|end|>\n"
              "<|user|>\nResult of call \"call_1\":\n-3 C<|end|>\n<|assistant|>\n");
    // tool_choice none: the tools are not shown; the calls and results of the conversation are.
    ServeRequest none = roundTrip();
    none.toolChoice = ToolChoice::None;
    EXPECT_EQ(toolPromptText(none, ChatTemplate{ChatTemplateKind::ChatML}).find("# Tools"), std::string::npos);
    EXPECT_NE(toolPromptText(none, ChatTemplate{ChatTemplateKind::ChatML}).find("<tool_response>"), std::string::npos);
}

TEST(ToolGrammar, ForcedCallsFollowTheSyntaxAndTheSchema) {
    ServeRequest r = parsed(chatWith(toolsField(R"("required")") + R"(,"parallel_tool_calls":false)"));
    const std::string args = R"({"city": "Oslo", "days": 3})";
    EXPECT_TRUE(grammarAccepts(ToolSyntax::Hermes, r, "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": " + args + "}\n</tool_call>"));
    EXPECT_TRUE(grammarAccepts(ToolSyntax::Hermes, r, "<tool_call>\n{\"name\": \"get_time\", \"arguments\": {}}\n</tool_call>"));
    EXPECT_TRUE(grammarAccepts(ToolSyntax::Llama3, r, "{\"name\": \"get_weather\", \"parameters\": " + args + "}"));
    EXPECT_TRUE(grammarAccepts(ToolSyntax::Mistral, r, "[TOOL_CALLS] [{\"name\": \"get_weather\", \"arguments\": " + args + "}]"));
    EXPECT_TRUE(grammarAccepts(ToolSyntax::Generic, r, "{\"tool_calls\": [{\"name\": \"get_weather\", \"arguments\": " + args + "}]}"));
    // The schema holds: an enum, a required member; plain text is no call; one call when not parallel.
    EXPECT_FALSE(grammarAccepts(ToolSyntax::Llama3, r, R"({"name": "get_weather", "parameters": {"city": "Rome", "days": 3}})"));
    EXPECT_FALSE(grammarAccepts(ToolSyntax::Llama3, r, R"({"name": "get_weather", "parameters": {"city": "Oslo"}})"));
    EXPECT_FALSE(grammarAccepts(ToolSyntax::Llama3, r, R"({"name": "get_wether", "parameters": {}})"));
    EXPECT_FALSE(grammarAccepts(ToolSyntax::Hermes, r, "Hello"));
    EXPECT_FALSE(grammarAccepts(ToolSyntax::Generic, r, R"({"tool_calls": [{"name": "get_time", "arguments": {}}, {"name": "get_time", "arguments": {}}]})"));
    r.parallelToolCalls = true;
    EXPECT_TRUE(grammarAccepts(ToolSyntax::Generic, r, R"({"tool_calls": [{"name": "get_time", "arguments": {}}, {"name": "get_time", "arguments": {}}]})"));
    EXPECT_TRUE(grammarAccepts(ToolSyntax::Hermes, r, "<tool_call>\n{\"name\": \"get_time\", \"arguments\": {}}\n</tool_call>\n<tool_call>\n"
                                                      "{\"name\": \"get_time\", \"arguments\": {}}\n</tool_call>"));
    // A named function: only its calls.
    r = parsed(chatWith(toolsField(R"({"type":"function","function":{"name":"get_time"}})")));
    EXPECT_TRUE(grammarAccepts(ToolSyntax::Mistral, r, R"([TOOL_CALLS] [{"name": "get_time", "arguments": {}}])"));
    EXPECT_FALSE(grammarAccepts(ToolSyntax::Mistral, r, "[TOOL_CALLS] [{\"name\": \"get_weather\", \"arguments\": " + args + "}]"));
}

TEST(ToolGrammar, AutoAllowsTextThatDoesNotStartAsACall) {
    const ServeRequest r = parsed(chatWith(toolsField()));
    EXPECT_TRUE(grammarAccepts(ToolSyntax::Hermes, r, "It is cold in Oslo."));
    EXPECT_TRUE(grammarAccepts(ToolSyntax::Hermes, r, ""));
    EXPECT_TRUE(grammarAccepts(ToolSyntax::Hermes, r, "<tool_call>\n{\"name\": \"get_time\", \"arguments\": {}}\n</tool_call>"));
    EXPECT_TRUE(grammarAccepts(ToolSyntax::Hermes, r, "<think>cold</think>"));  // Qwen 3 thinks first
    EXPECT_TRUE(grammarAccepts(ToolSyntax::Hermes, r, "<tool_"));
    EXPECT_FALSE(grammarAccepts(ToolSyntax::Hermes, r, "<tool_call>cold"));     // a started call is a call
    EXPECT_TRUE(grammarAccepts(ToolSyntax::Llama3, r, "It is {cold}."));
    EXPECT_FALSE(grammarAccepts(ToolSyntax::Llama3, r, "{cold}"));
    EXPECT_TRUE(grammarAccepts(ToolSyntax::Mistral, r, "[cold]"));
    EXPECT_FALSE(grammarAccepts(ToolSyntax::Mistral, r, "[TOOL_CALLS] cold"));
    EXPECT_TRUE(grammarAccepts(ToolSyntax::Generic, r, "cold"));
    EXPECT_FALSE(grammarAccepts(ToolSyntax::Generic, r, "{\"cold\": 1}"));
}

namespace {
const std::vector<ToolFunction>& offered() {
    static const std::vector<ToolFunction> tools = parsed(chatWith(toolsField())).tools;
    return tools;
}
std::string callsOf(const ParsedAnswer& a) {
    std::string out;
    for (const ToolCall& c : a.calls) out += c.name + " " + c.arguments + ";";
    return out;
}
}  // namespace

TEST(ToolParse, EachSyntaxGivesExactCalls) {
    ParsedAnswer a = parseToolAnswer(ToolSyntax::Hermes, "Let me look.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": "
                                                         "\"Oslo\", \"days\": 1}}\n</tool_call>\n<tool_call>\n{\"name\": \"get_time\", "
                                                         "\"arguments\": {}}\n</tool_call>\n", offered());
    EXPECT_EQ(a.content, "Let me look.");
    EXPECT_EQ(callsOf(a), R"(get_weather {"city": "Oslo", "days": 1};get_time {};)");  // the arguments as written
    a = parseToolAnswer(ToolSyntax::Llama3, " {\"name\": \"get_weather\", \"parameters\": {\"days\":2,\n \"city\": \"Paris\"}}", offered());
    EXPECT_EQ(a.content, "");
    EXPECT_EQ(callsOf(a), "get_weather {\"days\":2,\n \"city\": \"Paris\"};");
    a = parseToolAnswer(ToolSyntax::Mistral, "[TOOL_CALLS] [{\"name\": \"get_time\", \"arguments\": {}}, {\"name\": \"get_weather\", "
                                             "\"arguments\": {\"city\": \"Oslo\", \"days\": 1}, \"id\": \"abcdefghi\"}]", offered());
    EXPECT_EQ(callsOf(a), R"(get_time {};get_weather {"city": "Oslo", "days": 1};)");
    a = parseToolAnswer(ToolSyntax::Generic, "{\"tool_calls\": [{\"name\": \"get_time\", \"arguments\": {\"tz\": \"UTC\"}}]}", offered());
    EXPECT_EQ(callsOf(a), R"(get_time {"tz": "UTC"};)");
}

TEST(ToolParse, MalformedCallsArePlainContent) {
    const std::string deep = "<tool_call>\n{\"name\": \"get_time\", \"arguments\": " + std::string(5000, '[') + std::string(5000, ']') + "}\n</tool_call>";
    for (const auto& [syntax, text] : std::vector<std::pair<ToolSyntax, std::string>>{
             {ToolSyntax::Hermes, "<tool_call>\n{\"name\": \"get_time\", \"arguments\": {}}"},                    // not closed
             {ToolSyntax::Hermes, "<tool_call>\n{\"name\": \"rm_rf\", \"arguments\": {}}\n</tool_call>"},           // not offered
             {ToolSyntax::Hermes, "<tool_call>\n{\"name\": \"get_time\", \"arguments\": {}\n</tool_call>"},          // bad JSON
             {ToolSyntax::Hermes, "<tool_call>\n{\"name\": \"get_time\", \"arguments\": {}}\n</tool_call> and then"}, // text after
             {ToolSyntax::Hermes, "<tool_call>\n[\"get_time\"]\n</tool_call>"},                                        // no object
             {ToolSyntax::Hermes, deep},                                                                              // too deep
             {ToolSyntax::Llama3, "{\"name\": \"get_time\"}"},                                                        // no parameters
             {ToolSyntax::Llama3, "The answer is {\"name\": \"get_time\", \"parameters\": {}}"},
             {ToolSyntax::Mistral, "[TOOL_CALLS] []"},
             {ToolSyntax::Mistral, "[TOOL_CALLS] {\"name\": \"get_time\", \"arguments\": {}}"},
             {ToolSyntax::Generic, "{\"tool_calls\": [], \"x\": 1}"},
             {ToolSyntax::Generic, "{\"answer\": 42}"},
             {ToolSyntax::Generic, ""}}) {
        const ParsedAnswer a = parseToolAnswer(syntax, text, offered());
        EXPECT_TRUE(a.calls.empty()) << text.substr(0, 100);
        EXPECT_EQ(a.content, text) << text.substr(0, 100);
    }
}

namespace {
// A stream's parts as one readable line: content as it is, a call's opening as <name>, arguments
// fragments between | |.
std::string shown(const StreamPart& p) {
    std::string out = p.content;
    for (const CallDelta& d : p.calls) out += d.opens ? "<" + std::to_string(d.index) + ":" + d.name + ">" : "|" + d.arguments + "|";
    return out;
}
}  // namespace

TEST(ToolStream, CallsStreamAsTheyAreWrittenAndNeverAsContent) {
    ToolCallStream hermes(ToolSyntax::Hermes, offered());
    EXPECT_EQ(shown(hermes.push("Hi")), "Hi");
    EXPECT_EQ(shown(hermes.push(" <b> x")), " <b> x");
    EXPECT_EQ(shown(hermes.push("\n<tool")), "");  // may become a call
    EXPECT_EQ(shown(hermes.push("_call>\n{\"name\": \"get_wea")), "");
    EXPECT_EQ(shown(hermes.push("ther\", \"arguments\": {\"ci")), "<0:get_weather>|{\"ci|");
    EXPECT_EQ(shown(hermes.push("ty\": \"Oslo\", \"days\": 1}}\n</tool_call>\n<tool_call>\n{\"name\": \"get_time\", ")), "|ty\": \"Oslo\", \"days\": 1}|");
    EXPECT_EQ(shown(hermes.push("\"arguments\": {\"s\": \"}\"}}\n</tool_call>")), "<1:get_time>|{\"s\": \"}\"}|");
    bool calls = false;
    EXPECT_EQ(shown(hermes.finish(true, calls)), "");  // everything was sent
    EXPECT_TRUE(calls);

    ToolCallStream notACall(ToolSyntax::Hermes, offered());
    EXPECT_EQ(shown(notACall.push("a <to")), "a");
    EXPECT_EQ(shown(notACall.push("ol")), "");
    EXPECT_EQ(shown(notACall.push("s>")), " <tools>");

    // Written otherwise than the grammar writes it: sent whole at the end.
    ToolCallStream llama(ToolSyntax::Llama3, offered());
    EXPECT_EQ(shown(llama.push(" {\"parameters\": {}, ")), "");
    EXPECT_EQ(shown(llama.push("\"name\": \"get_time\"}")), "");
    EXPECT_EQ(shown(llama.finish(true, calls)), "<0:get_time>|{}|");
    EXPECT_TRUE(calls);

    // Cut short: what was held back is content after all.
    ToolCallStream cut(ToolSyntax::Generic, offered());
    EXPECT_EQ(shown(cut.push("{\"tool_")), "");
    EXPECT_EQ(shown(cut.finish(true, calls)), "{\"tool_");
    EXPECT_FALSE(calls);
    ToolCallStream text(ToolSyntax::Generic, offered());
    EXPECT_EQ(shown(text.push("Hello")), "Hello");
    EXPECT_EQ(shown(text.push(" {x}")), " {x}");
}

TEST(ToolResponse, CallsAreShapedAsOpenAis) {
    const ServeRequest r = parsed(chatWith(toolsField()));
    const ResponseHeader h{Endpoint::Chat, "chatcmpl-1", "m", 5};
    EXPECT_EQ(dumpJson(toolDeltaChunk(h, r, CallDelta{0, true, "call_x", "get_time", {}}, true)),
              R"({"id":"chatcmpl-1","object":"chat.completion.chunk","created":5,"model":"m","choices":[{"index":0,"delta":)"
              R"({"role":"assistant","tool_calls":[{"index":0,"id":"call_x","type":"function","function":{"name":"get_time",)"
              R"("arguments":""}}]},"logprobs":null,"finish_reason":null}]})");
    EXPECT_EQ(dumpJson(toolDeltaChunk(h, r, CallDelta{1, false, {}, {}, "{\"a\""}, false)),
              R"({"id":"chatcmpl-1","object":"chat.completion.chunk","created":5,"model":"m","choices":[{"index":0,"delta":)"
              R"({"tool_calls":[{"index":1,"function":{"arguments":"{\"a\""}}]},"logprobs":null,"finish_reason":null}]})");
    Json choice = {{"index", 0}, {"message", {{"role", "assistant"}, {"content", "x"}}}, {"finish_reason", "stop"}};
    ParsedAnswer answer{"", {ToolCall{"", "get_time", "{}"}}};
    setToolCalls(choice, answer);
    const std::string id = answer.calls[0].id;
    EXPECT_EQ(id.size(), 29u);
    EXPECT_EQ(id.substr(0, 5), "call_");
    EXPECT_EQ(dumpJson(choice), R"({"index":0,"message":{"role":"assistant","content":null,"tool_calls":[{"id":")" + id +
                                    R"(","type":"function","function":{"name":"get_time","arguments":"{}"}}]},"finish_reason":"tool_calls"})");
    bool first = true;
    const std::string events = toolStreamEvents(h, r, StreamPart{"Hi", {CallDelta{0, false, {}, {}, "{}"}}}, first);
    EXPECT_FALSE(first);
    EXPECT_EQ(events.substr(0, 6), "data: ");
    EXPECT_NE(events.find(R"("delta":{"role":"assistant","content":"Hi"})"), std::string::npos);
    EXPECT_NE(events.find(R"("delta":{"tool_calls":[{"index":0,"function":{"arguments":"{}"}}]})"), std::string::npos);
}
