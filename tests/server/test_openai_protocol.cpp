// server/: the OpenAI request rules, the response shapes and the streamed text, without sockets.
#include <gtest/gtest.h>

#include <cmath>

#include "server/completion_job.h"
#include "server/openai_request.h"
#include "server/openai_response.h"
#include "server/admission.h"
#include "grammar/grammar_matcher.h"

using namespace inferscope;
using namespace inferscope::server;

namespace {

ApiError errorOf(std::string_view body, Endpoint e = Endpoint::Chat) {
    auto r = parseServeRequest(body, e);
    EXPECT_FALSE(r.has_value()) << body;
    return r ? ApiError{} : r.error();
}

constexpr std::string_view kChat = R"({"model":"m","messages":[{"role":"user","content":"hi"}]})";

}  // namespace

TEST(OpenAiRequest, ChatDefaultsAreOpenAis) {
    auto r = parseServeRequest(kChat, Endpoint::Chat);
    ASSERT_TRUE(r.has_value());
    EXPECT_EQ(r->model, "m");
    ASSERT_EQ(r->messages.size(), 1u);
    EXPECT_EQ(r->messages[0].role, ChatRole::User);
    EXPECT_EQ(r->messages[0].content, "hi");
    EXPECT_EQ(r->sampler.temperature, 1.0f);
    EXPECT_EQ(r->sampler.topP, 1.0f);
    EXPECT_EQ(r->sampler.topK, 0);
    EXPECT_EQ(r->sampler.minP, 0.0f);
    EXPECT_EQ(r->sampler.repeatPenalty, 1.0f);
    EXPECT_FALSE(r->seed);
    EXPECT_FALSE(r->maxTokens);
    EXPECT_FALSE(r->stream);
    EXPECT_FALSE(r->logprobs);
    EXPECT_EQ(r->sampler.topN, 0);
}

TEST(OpenAiRequest, EveryParameterIsRead) {
    auto r = parseServeRequest(R"({"messages":[{"role":"system","content":"be brief"},{"role":"user","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}],
        "temperature":0,"top_p":0.5,"top_k":7,"min_p":0.1,"seed":42,"stop":["x","y"],"max_tokens":9,"repeat_penalty":1.1,
        "stream":true,"stream_options":{"include_usage":true},"logprobs":true,"top_logprobs":20,"n":1})",
                               Endpoint::Chat);
    ASSERT_TRUE(r.has_value()) << r.error().message;
    EXPECT_EQ(r->messages[0].role, ChatRole::System);
    EXPECT_EQ(r->messages[1].content, "ab");
    EXPECT_EQ(r->sampler.temperature, 0.0f);
    EXPECT_EQ(r->sampler.topP, 0.5f);
    EXPECT_EQ(r->sampler.topK, 7);
    EXPECT_EQ(r->sampler.minP, 0.1f);
    EXPECT_EQ(r->sampler.repeatPenalty, 1.1f);
    EXPECT_EQ(*r->seed, 42u);
    EXPECT_EQ(r->stop, (std::vector<std::string>{"x", "y"}));
    EXPECT_EQ(*r->maxTokens, 9);
    EXPECT_TRUE(r->stream);
    EXPECT_TRUE(r->includeUsage);
    EXPECT_TRUE(r->logprobs);
    EXPECT_EQ(r->topLogprobs, 20);
    EXPECT_EQ(r->sampler.topN, 20);
}

TEST(OpenAiRequest, CompletionLogprobsIsACount) {
    auto r = parseServeRequest(R"({"prompt":"Once","logprobs":3,"max_completion_tokens":4})", Endpoint::Completion);
    ASSERT_TRUE(r.has_value());
    EXPECT_EQ(r->prompt, "Once");
    EXPECT_TRUE(r->logprobs);
    EXPECT_EQ(r->topLogprobs, 3);
    EXPECT_EQ(*r->maxTokens, 4);
    EXPECT_EQ(errorOf(R"({"prompt":"a","logprobs":21})", Endpoint::Completion).param, "logprobs");
    EXPECT_EQ(errorOf(R"({"prompt":5})", Endpoint::Completion).param, "prompt");
    EXPECT_EQ(errorOf(R"({"messages":[]})", Endpoint::Completion).param, "prompt");
}

TEST(OpenAiRequest, BadJsonIs400WithItsCode) {
    for (std::string_view body : {"{", R"({"messages":[{"role":"user","content":"hi"})", "not json", ""}) {
        const ApiError e = errorOf(body);
        EXPECT_EQ(e.status, 400);
        EXPECT_EQ(e.code, "invalid_json") << body;
    }
    EXPECT_EQ(errorOf("[1,2]").message, "the request body must be a JSON object");
    // Invalid UTF-8 inside a string (a lone continuation byte, an overlong form).
    EXPECT_EQ(errorOf("{\"messages\":[{\"role\":\"user\",\"content\":\"a\x80z\"}]}").code, "invalid_json");
    EXPECT_EQ(errorOf("{\"messages\":[{\"role\":\"user\",\"content\":\"\xc0\xaf\"}]}").code, "invalid_json");
}

TEST(OpenAiRequest, OutOfRangeValuesNameTheParameter) {
    auto withField = [](const std::string& f) { return R"({"messages":[{"role":"user","content":"hi"}],)" + f + "}"; };
    const std::pair<std::string, std::string> cases[] = {
        {R"("top_logprobs":100,"logprobs":true)", "top_logprobs"}, {R"("top_logprobs":-1,"logprobs":true)", "top_logprobs"},
        {R"("top_logprobs":3)", "top_logprobs"},  // without logprobs: true
        {R"("max_tokens":-5)", "max_tokens"},     {R"("max_tokens":0)", "max_tokens"},
        {R"("max_tokens":1.5)", "max_tokens"},    {R"("temperature":-1)", "temperature"},
        {R"("temperature":"hot")", "temperature"}, {R"("top_p":0)", "top_p"},
        {R"("top_p":1.01)", "top_p"},             {R"("min_p":2)", "min_p"},
        {R"("top_k":-2)", "top_k"},               {R"("repeat_penalty":0)", "repeat_penalty"},
        {R"("n":2)", "n"},                        {R"("stop":["a","b","c","d","e"])", "stop"},
        {R"("stop":[1])", "stop"},                {R"("stream":"yes")", "stream"},
        {R"("logprobs":1)", "logprobs"},          {R"("model":7)", "model"},
        {R"("stream_options":{"include_usage":1})", "include_usage"}};
    for (const auto& [f, param] : cases) {
        const ApiError e = errorOf(withField(f));
        EXPECT_EQ(e.status, 400) << f;
        EXPECT_EQ(e.param, param) << f << ": " << e.message;
    }
    EXPECT_EQ(errorOf(withField(R"("top_logprobs":100,"logprobs":true)")).message, "top_logprobs must be between 0 and 20");
    EXPECT_EQ(errorOf(withField(R"("max_tokens":-5)")).message, "max_tokens must be at least 1");
    EXPECT_EQ(errorOf(R"({"messages":[{"role":"function","content":"x"}]})").param, "messages[0].role");
    EXPECT_EQ(errorOf(R"({"messages":[{"role":"tool","content":"x"}]})").param, "messages[0].tool_call_id");
    EXPECT_EQ(errorOf(R"({"messages":[{"role":"user"}]})").param, "messages[0].content");
    EXPECT_EQ(errorOf(R"({"model":"m"})").param, "messages");
}

TEST(OpenAiRequest, UnknownFieldsAndNullsAreAccepted) {
    auto r = parseServeRequest(R"({"messages":[{"role":"user","content":"hi","name":"bob"}],"frobnicate":{"deep":[1]},
        "user":"u","temperature":null,"max_tokens":null,"stop":null,"presence_penalty":0})",
                               Endpoint::Chat);
    ASSERT_TRUE(r.has_value()) << r.error().message;
    EXPECT_EQ(r->sampler.temperature, 1.0f);
    EXPECT_FALSE(r->maxTokens);
    EXPECT_TRUE(r->stop.empty());
}

TEST(OpenAiResponse, ErrorJsonIsOpenAisShape) {
    EXPECT_EQ(dumpJson(errorJson(badParameter("top_logprobs", "too many"))),
              R"({"error":{"message":"too many","type":"invalid_request_error","param":"top_logprobs","code":null}})");
    EXPECT_EQ(dumpJson(errorJson({404, "no", "invalid_request_error", "model", "model_not_found"})),
              R"({"error":{"message":"no","type":"invalid_request_error","param":"model","code":"model_not_found"}})");
}

namespace {

// A step whose logit is 2 where log-sum-exp is 3: logprob exactly -1; three candidates.
StepRecord sampleStep(std::string piece) {
    StepRecord s;
    s.step = 0;
    s.position = 5;
    s.piece = std::move(piece);
    s.sample.id = 10;
    s.sample.logit = 2.0f;
    s.sample.logSumExp = 3.0f;
    s.sample.pFinal = 1.0f;
    for (int i = 0; i < 3; ++i) {
        CandidateRecord c;
        c.id = 10 + i;
        c.logit = 2.0f - float(i);
        c.p.fill(0.25f);
        s.sample.top.push_back(c);
    }
    return s;
}

StepPieceLookup pieces() {
    return [](int32_t id) -> std::optional<std::string> { return id == 11 ? std::string("\xe2\x80") : "t" + std::to_string(id); };
}

}  // namespace

TEST(OpenAiResponse, ChatTokenLogprobIsOpenAisShapePlusTheStepRecord) {
    const Json j = chatTokenLogprob(sampleStep(" a"), 2, pieces());
    EXPECT_EQ(j["token"], " a");
    EXPECT_EQ(j["logprob"].get<double>(), -1.0);
    EXPECT_EQ(j["bytes"], Json::array({32, 97}));
    ASSERT_EQ(j["top_logprobs"].size(), 2u);
    EXPECT_EQ(j["top_logprobs"][0]["token"], "t10");
    EXPECT_EQ(j["top_logprobs"][0]["logprob"].get<double>(), -1.0);
    EXPECT_EQ(j["top_logprobs"][1]["logprob"].get<double>(), -2.0);
    EXPECT_EQ(j["top_logprobs"][1]["bytes"], Json::array({0xe2, 0x80}));  // part of a character: the exact bytes
    EXPECT_EQ(j["inferscope"]["id"], 10);
    EXPECT_EQ(j["inferscope"]["p_final"], 1.0);
    EXPECT_EQ(j["inferscope"]["top"].size(), 2u);
    EXPECT_EQ(j["inferscope"]["top"][1]["stages"]["temperature"], 0.25);
    EXPECT_TRUE(j["inferscope"].contains("survivors"));
    EXPECT_EQ(chatTokenLogprob(sampleStep("x"), 0, pieces())["top_logprobs"].size(), 0u);
}

TEST(OpenAiResponse, CompletionLogprobsHaveOffsets) {
    const Json j = completionLogprobs({sampleStep("ab"), sampleStep("c")}, 1, pieces(), 4);
    EXPECT_EQ(j["tokens"], Json::array({"ab", "c"}));
    EXPECT_EQ(j["token_logprobs"], Json::array({-1.0, -1.0}));
    EXPECT_EQ(j["text_offset"], Json::array({4, 6}));
    EXPECT_EQ(dumpJson(j["top_logprobs"]), R"([{"t10":-1.0},{"t10":-1.0}])");
    EXPECT_EQ(j["inferscope"].size(), 2u);
}

TEST(OpenAiResponse, ChunksAndWholeAnswers) {
    ServeRequest r;
    r.endpoint = Endpoint::Chat;
    const ResponseHeader h{Endpoint::Chat, "chatcmpl-1", "m", 7};
    const std::vector<StepRecord> none;
    EXPECT_EQ(dumpJson(completionChunk(h, "Hi", none, r, pieces(), true)),
              R"({"id":"chatcmpl-1","object":"chat.completion.chunk","created":7,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":"Hi"},"logprobs":null,"finish_reason":null}]})");
    EXPECT_EQ(dumpJson(completionChunk(h, "", none, r, pieces(), false, "length")),
              R"({"id":"chatcmpl-1","object":"chat.completion.chunk","created":7,"model":"m","choices":[{"index":0,"delta":{},"logprobs":null,"finish_reason":"length"}]})");
    GenerationSummary s;
    s.reason = FinishReason::EndOfGeneration;
    s.prefill.nPrompt = 5;
    s.prefill.nReused = 2;
    s.prefill.nCopied = 2;
    s.nGenerated = 3;
    const Json whole = completionResponse(h, "Hi!", s, none, r, pieces());
    EXPECT_EQ(whole["object"], "chat.completion");
    EXPECT_EQ(whole["choices"][0]["message"]["content"], "Hi!");
    EXPECT_EQ(whole["choices"][0]["finish_reason"], "stop");
    EXPECT_EQ(dumpJson(whole["usage"]), R"({"prompt_tokens":5,"completion_tokens":3,"total_tokens":8,"prompt_tokens_details":{"cached_tokens":2}})");
    EXPECT_EQ(whole["timings"]["prompt_tokens_copied"], 2);
    EXPECT_TRUE(whole["timings"].contains("decode_tokens_per_s"));
    ServeRequest legacy;
    legacy.endpoint = Endpoint::Completion;
    legacy.logprobs = true;
    const Json later = completionChunk({Endpoint::Completion, "cmpl-1", "m", 7}, "c", {sampleStep("c")}, legacy, pieces(), false, {}, 6);
    EXPECT_EQ(later["choices"][0]["text"], "c");
    EXPECT_EQ(later["choices"][0]["logprobs"]["text_offset"], Json::array({6}));
    EXPECT_EQ(sseEvent({{"a", 1}}), "data: {\"a\":1}\n\n");
    EXPECT_EQ(sseEvent({{"a", "\xff"}}), "data: {\"a\":\"\xef\xbf\xbd\"}\n\n");  // never invalid UTF-8 on the wire
}

TEST(AnswerText, HoldsBackPartialCharactersAndStopPrefixes) {
    AnswerText t({"END"});
    EXPECT_EQ(t.push("a\xc3"), "a");       // é split over two tokens
    EXPECT_EQ(t.push("\xa9 E"), "\xc3\xa9 ");  // "E" could start END
    EXPECT_EQ(t.push("N"), "");
    EXPECT_EQ(t.push("x"), "ENx");         // it did not
    EXPECT_EQ(t.finish("a\xc3\xa9 ENx"), "");
    EXPECT_EQ(t.shown(), "a\xc3\xa9 ENx");
    AnswerText cut({"END"});
    EXPECT_EQ(cut.push("ok E"), "ok ");
    EXPECT_EQ(cut.push("ND"), "");
    EXPECT_EQ(cut.finish("ok "), "");     // the engine's text is cut before the stop string
    EXPECT_EQ(cut.shown(), "ok ");
}

TEST(SlotChoice, LongestCachedPrefixWins) {
    const std::vector<int32_t> a{1, 2, 3}, b{1, 2, 3, 4, 5}, c{9};
    const std::vector<int32_t> prompt{1, 2, 3, 4, 7};
    EXPECT_EQ(pickSlot({a, b, c}, prompt), 1);
    EXPECT_EQ(pickSlot({c, a}, prompt), 1);
    EXPECT_EQ(pickSlot({c, c}, prompt), 0);  // nothing shared: the first free slot
    EXPECT_EQ(pickSlot({}, prompt), -1);
}

TEST(OpenAiRequest, LogitBiasAndPenaltiesGoIntoTheSampler) {
    auto r = parseServeRequest(R"({"prompt":"a","logit_bias":{"5":-100,"17":2.5},"presence_penalty":0.5,"frequency_penalty":-1,
        "repeat_last_n":-1,"repetition_penalty":1.1})", Endpoint::Completion);
    ASSERT_TRUE(r) << r.error().message;
    auto bias = r->sampler.logitBias;
    std::sort(bias.begin(), bias.end());
    ASSERT_EQ(bias.size(), 2u);
    EXPECT_EQ(bias[0], std::make_pair(5, -100.0f));
    EXPECT_EQ(bias[1], std::make_pair(17, 2.5f));
    EXPECT_EQ(r->sampler.presencePenalty, 0.5f);
    EXPECT_EQ(r->sampler.frequencyPenalty, -1.0f);
    EXPECT_EQ(r->sampler.repeatLastN, -1);
    EXPECT_EQ(r->sampler.repeatPenalty, 1.1f);
    // The app sends both names of the repetition penalty; they must agree.
    EXPECT_TRUE(parseServeRequest(R"({"prompt":"a","repeat_penalty":1.2,"repetition_penalty":1.2})", Endpoint::Completion));
    EXPECT_EQ(parseServeRequest(R"({"prompt":"a","repeat_penalty":1.2,"repetition_penalty":1.3})", Endpoint::Completion).error().param,
              "repetition_penalty");
    for (const char* bad : {R"("logit_bias":{"x":1})", R"("logit_bias":{"-1":1})", R"("logit_bias":{"1":101})", R"("logit_bias":{"1":"a"})",
                            R"("logit_bias":[1])", R"("logit_bias":{"99999999999":1})"}) {
        const auto e = parseServeRequest(std::string(R"({"prompt":"a",)") + bad + "}", Endpoint::Completion);
        ASSERT_FALSE(e) << bad;
        EXPECT_EQ(e.error().param, "logit_bias") << bad;
    }
    std::string many = R"({"prompt":"a","logit_bias":{)";
    for (int i = 0; i <= int(kMaxLogitBias); ++i) many += (i ? "," : "") + std::string("\"") + std::to_string(i) + "\":1";
    EXPECT_EQ(parseServeRequest(many + "}}", Endpoint::Completion).error().param, "logit_bias");
    EXPECT_EQ(parseServeRequest(R"({"prompt":"a","presence_penalty":2.5})", Endpoint::Completion).error().param, "presence_penalty");
    EXPECT_EQ(parseServeRequest(R"({"prompt":"a","frequency_penalty":-3})", Endpoint::Completion).error().param, "frequency_penalty");
}

TEST(OpenAiRequest, FieldsThatWouldChangeTheAnswerAreRefusedByName) {
    const std::string chat = R"({"messages":[{"role":"user","content":"hi"}],)";
    for (const auto& [f, param] : std::vector<std::pair<std::string, std::string>>{
             {R"("functions":[{"name":"f"}])", "functions"},
             {R"("function_call":"auto")", "function_call"},
             {R"("min_tokens":5)", "min_tokens"},
             {R"("best_of":3)", "best_of"},
             {R"("guided_json":{"type":"object"})", "guided_json"},
             {R"("stop_token_ids":[2])", "stop_token_ids"}}) {
        const auto e = parseServeRequest(chat + f + "}", Endpoint::Chat);
        ASSERT_FALSE(e) << f;
        EXPECT_EQ(e.error().param, param) << f;
        EXPECT_NE(e.error().message.find("not supported"), std::string::npos) << e.error().message;
    }
    // The same fields asking for nothing pass, as do fields that change nothing.
    for (const char* f : {R"("tools":[])", R"("response_format":{"type":"text"})", R"("tool_choice":"none")", R"("ignore_eos":false)",
                          R"("min_tokens":0)", R"("best_of":1)", R"("user":"u","metadata":{"a":"b"},"store":false,"parallel_tool_calls":true)",
                          R"("echo":false)", R"("modalities":["text"])"})
        EXPECT_TRUE(parseServeRequest(chat + f + "}", Endpoint::Chat)) << f;
    EXPECT_EQ(parseServeRequest(chat + R"("echo":true})", Endpoint::Chat).error().param, "echo");
    // ignore_eos (llama.cpp's and vLLM's) is implemented: a boolean.
    EXPECT_TRUE(parseServeRequest(chat + R"("ignore_eos":true})", Endpoint::Chat)->ignoreEos);
    EXPECT_EQ(parseServeRequest(chat + R"("ignore_eos":1})", Endpoint::Chat).error().message, "ignore_eos must be true or false, not a number");
    EXPECT_EQ(parseServeRequest(R"({"prompt":"a","suffix":"b"})", Endpoint::Completion).error().param, "suffix");
    // Tools are read on chat completions (test_tool_calls.cpp); the legacy endpoint has none.
    EXPECT_TRUE(parseServeRequest(chat + R"("tools":[{"type":"function","function":{"name":"f"}}],"tool_choice":"required"})", Endpoint::Chat));
    EXPECT_EQ(parseServeRequest(R"({"prompt":"a","tool_choice":"required"})", Endpoint::Completion).error().param, "tool_choice");
    // add_generation_prompt agrees with continuing (or not) a last assistant message.
    const std::string cont = R"({"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":"Once"}],)";
    EXPECT_TRUE(parseServeRequest(cont + R"("continue_final_message":true,"add_generation_prompt":false})", Endpoint::Chat));
    EXPECT_EQ(parseServeRequest(cont + R"("add_generation_prompt":true})", Endpoint::Chat).error().param, "add_generation_prompt");
    EXPECT_EQ(parseServeRequest(chat + R"("add_generation_prompt":false})", Endpoint::Chat).error().param, "add_generation_prompt");
    EXPECT_TRUE(parseServeRequest(chat + R"("add_generation_prompt":true})", Endpoint::Chat));
}

// No refusal repeats a value of the body: a marker in every field a client fills never comes back.
TEST(OpenAiRequest, RefusalsRepeatNothingTheClientSent) {
    const std::string m = "\"ZQX-marker\"";
    const std::string deepMarker = "[[[[" + m + "]]]]";
    const std::string chat = R"({"messages":[{"role":"user","content":"hi"}],)";
    for (const std::string& f : std::vector<std::string>{R"("temperature":)" + m, R"("top_p":)" + m, R"("max_tokens":)" + m, R"("stream":)" + m,
                                 R"("n":)" + m, R"("seed":)" + deepMarker, R"("logprobs":)" + m, R"("stop":[)" + m + ",1]",
                                 R"("model":)" + deepMarker, std::string(R"("logit_bias":{"ZQX-marker":1})"), R"("tools":[)" + m + "]",
                                 R"("stream_options":)" + m, R"("grammar":"root ::= ZQX-marker")", R"("grammar":"ZQX-marker")",
                                 R"("grammar":"root ::= \"a\" ZQX")", R"("response_format":{"type":)" + m + "}",
                                 R"("response_format":{"type":"json_schema","json_schema":{"name":"ZQX marker"}})",
                                 R"("response_format":{"type":"json_schema","json_schema":{"schema":{"type":)" + m + "}}}",
                                 R"("response_format":{"type":"json_schema","json_schema":{"schema":{"properties":{"ZQX-marker":{"allOf":[]}}}}})",
                                 R"("json_schema":{"$ref":)" + m + "}", R"("json_schema":{"type":"object","required":[)" + m + "]}",
                                 R"("json_schema":{"$defs":{"ZQX-marker":{"$ref":"#/$defs/ZQX-marker"}},"$ref":"#/$defs/ZQX-marker"})"}) {
        const auto e = parseServeRequest(chat + f + "}", Endpoint::Chat);
        ASSERT_FALSE(e) << f;
        EXPECT_EQ(e.error().message.find("ZQX"), std::string::npos) << f << ": " << e.error().message;
    }
    for (const std::string& body : {std::string(R"({"messages":[{"role":"ZQX-marker","content":"x"}]})"),
                                    std::string(R"({"messages":[{"role":"user","content":{"ZQX-marker":1}}]})"),
                                    std::string(R"({"messages": ZQX-marker})")}) {
        const auto e = parseServeRequest(body, Endpoint::Chat);
        ASSERT_FALSE(e) << body;
        EXPECT_EQ(e.error().message.find("ZQX"), std::string::npos) << body << ": " << e.error().message;
    }
}

namespace {

// Whether the request's grammar takes the whole text.
bool follows(const ServeRequest& r, std::string_view text) {
    if (!r.grammar) return false;
    grammar::GrammarMatcher m(r.grammar);
    return m.acceptBytes(text).has_value() && m.isComplete();
}

std::string withField(std::string_view field) { return R"({"messages":[{"role":"user","content":"hi"}],)" + std::string(field) + "}"; }

}  // namespace

// response_format (json_object, json_schema with strict), llama.cpp's grammar and json_schema: the
// grammar compiled with the request, the schema's members in the order sent.
TEST(OpenAiRequest, StructuredOutputIsCompiledWithTheRequest) {
    auto text = parseServeRequest(withField(R"("response_format":{"type":"text"})"), Endpoint::Chat);
    ASSERT_TRUE(text);
    EXPECT_EQ(text->format, OutputFormat::Text);
    EXPECT_FALSE(text->grammar);

    auto object = parseServeRequest(withField(R"("response_format":{"type":"json_object"})"), Endpoint::Chat);
    ASSERT_TRUE(object) << object.error().message;
    EXPECT_EQ(object->format, OutputFormat::JsonObject);
    EXPECT_TRUE(follows(*object, R"({"a": [1, {"b": null}]})"));
    EXPECT_FALSE(follows(*object, "[1]"));

    // "b" before "a", as sent (a sorted parse would put "a" first).
    const std::string schema = R"({"type":"object","properties":{"b":{"type":"integer"},"a":{"type":"string","maxLength":3}},)"
                               R"("required":["b","a"],"additionalProperties":false})";
    auto strict = parseServeRequest(withField(R"("response_format":{"type":"json_schema","json_schema":{"name":"pair","strict":true,"schema":)" +
                                              schema + "}}"),
                                    Endpoint::Chat);
    ASSERT_TRUE(strict) << strict.error().message;
    EXPECT_EQ(strict->format, OutputFormat::JsonSchema);
    EXPECT_TRUE(follows(*strict, R"({"b": 1, "a": "xyz"})"));
    EXPECT_FALSE(follows(*strict, R"({"a": "xyz", "b": 1})"));
    EXPECT_FALSE(follows(*strict, R"({"b": 1, "a": "wxyz"})"));
    auto noSchema = parseServeRequest(withField(R"("response_format":{"type":"json_schema","json_schema":{"name":"any"}})"), Endpoint::Chat);
    ASSERT_TRUE(noSchema);
    EXPECT_TRUE(follows(*noSchema, R"({"x": true})"));

    // The member's name escaped, the schema pretty-printed, a decoy of the same name inside another
    // member: the schema is the one the parser read.
    auto escaped = parseServeRequest(withField(R"("metadata":{"response_format":1},"\u0072esponse_format" : { "type" : "json_schema", )"
                                               R"("json_schema" : {"schema" :)" + schema + "}}"),
                                     Endpoint::Chat);
    ASSERT_TRUE(escaped) << escaped.error().message;
    EXPECT_TRUE(follows(*escaped, R"({"b": 1, "a": "xyz"})"));
    EXPECT_FALSE(follows(*escaped, R"({"a": "xyz", "b": 1})"));

    auto llama = parseServeRequest(R"({"prompt":"a","json_schema":)" + schema + "}", Endpoint::Completion);
    ASSERT_TRUE(llama) << llama.error().message;
    EXPECT_TRUE(follows(*llama, R"({"b":-7,"a":""})"));
    auto gbnf = parseServeRequest(R"({"prompt":"a","grammar":"root ::= (\"yes\" | \"no\") \".\""})", Endpoint::Completion);
    ASSERT_TRUE(gbnf) << gbnf.error().message;
    EXPECT_EQ(gbnf->format, OutputFormat::Grammar);
    EXPECT_TRUE(follows(*gbnf, "no."));
    EXPECT_FALSE(follows(*gbnf, "maybe."));
    auto empty = parseServeRequest(R"({"prompt":"a","grammar":""})", Endpoint::Completion);
    ASSERT_TRUE(empty);
    EXPECT_FALSE(empty->grammar);
}

// Each refusal names the field and says what is wrong in the parser's own words, with the line and
// column of a grammar or the position of a schema's member.
TEST(OpenAiRequest, BadStructuredOutputIsRefusedBeforeItWaits) {
    struct Case {
        std::string field, param, message;
    };
    const std::string big(kMaxGrammarBytes, ' ');
    std::string manyMembers;  // 1025 members: their parse in order would cost their square
    for (int i = 0; i <= 1024; ++i) manyMembers += (i ? ",\"p" : "\"p") + std::to_string(i) + "\":{}";
    for (const Case& c : std::vector<Case>{
             {R"("response_format":"json")", "response_format", "response_format must be an object with a type: text, json_object or json_schema"},
             {R"("response_format":{"type":"xml"})", "response_format", "response_format's type must be text, json_object or json_schema"},
             {R"("response_format":{"type":"json_schema"})", "response_format",
              "response_format.json_schema must be an object with name, schema and strict"},
             {R"("response_format":{"type":"json_schema","json_schema":{"name":"a b"}})", "response_format",
              "response_format.json_schema.name must be 1 to 64 letters, digits, '_' or '-'"},
             {R"("response_format":{"type":"json_schema","json_schema":{"strict":"yes"}})", "response_format",
              "response_format.json_schema.strict must be true or false"},
             {R"("response_format":{"type":"json_schema","json_schema":{"schema":5}})", "response_format",
              "response_format.json_schema.schema must be a JSON schema (an object)"},
             {R"("response_format":{"type":"json_schema","json_schema":{"schema":{"properties":{"a":{},"b":{"allOf":[]}}}}})",
              "response_format", "JSON schema at /properties/#1: 'allOf' is not supported"},
             {R"("response_format":{"type":"json_schema","json_schema":{"strict":true,"schema":{"type":"number","maximum":3}}})",
              "response_format", "JSON schema at /: 'maximum' cannot be enforced (strict)"},
             {R"("response_format":{"type":"json_object"},"grammar":"root ::= \"a\"")", "response_format",
              "give at most one of response_format, grammar and json_schema"},
             {R"("grammar":"root ::= item")", "grammar", "grammar line 1, column 10: a rule is used but never defined"},
             {R"("grammar":"root ::= x\nx ::= x \"a\" | \"b\"")", "grammar",
              "grammar line 2, column 1: left recursion: a rule can reach itself before matching any character"},
             {R"("grammar":"root ::= )" + std::string(100, '(') + R"(\"a\")" + std::string(100, ')') + "\"", "grammar",
              "grammar line 1, column 74: groups nested more than 64 deep"},
             {R"("grammar":"root ::= \"a\"{100000}")", "grammar", "grammar line 1, column 14: repetition bound above the limit of 2000"},
             {R"("grammar":7)", "grammar", "grammar must be a string of GBNF rules"},
             {R"("grammar":"root ::= \"a\")" + big + "\"", "grammar", "grammar is larger than 262144 bytes"},
             {R"("json_schema":{"description":")" + big + "\"}", "json_schema", "json_schema is larger than 262144 bytes"},
             {R"("json_schema":{"properties":{)" + manyMembers + "}}", "json_schema",
              "JSON schema: the schema has an object of more than 1024 members"},
             {R"("json_schema":[1])", "json_schema", "json_schema must be a JSON schema (an object)"}}) {
        const ApiError e = errorOf(withField(c.field));
        EXPECT_EQ(e.status, 400) << c.field.substr(0, 200);
        EXPECT_EQ(e.param, c.param) << c.field.substr(0, 200);
        EXPECT_EQ(e.message, c.message) << c.field.substr(0, 200);
    }
}

// echo on the legacy endpoint: the prompt in front, max_tokens 0 allowed with it only.
TEST(OpenAiRequest, EchoIsTheCompletionEndpointsAndAllowsNoNewTokens) {
    auto echo = parseServeRequest(R"({"prompt":"a","echo":true,"logprobs":1,"max_tokens":0})", Endpoint::Completion);
    ASSERT_TRUE(echo) << echo.error().message;
    EXPECT_TRUE(echo->echo);
    EXPECT_EQ(echo->maxTokens, 0);
    const ApiError zero = errorOf(R"({"prompt":"a","max_tokens":0})", Endpoint::Completion);
    EXPECT_EQ(zero.param, "max_tokens");
    EXPECT_EQ(zero.message, "max_tokens must be at least 1");
    EXPECT_EQ(errorOf(R"({"prompt":"a","echo":true,"max_tokens":-1})", Endpoint::Completion).message, "max_tokens must be at least 0");
    EXPECT_EQ(errorOf(R"({"prompt":"a","echo":"yes"})", Endpoint::Completion).param, "echo");
}

// The prompt's tokens go first: its first token has no logprob (null), the answer's text offsets
// move past the prompt.
TEST(OpenAiResponse, EchoPutsThePromptsTokensFirst) {
    ServeRequest r;
    r.endpoint = Endpoint::Completion;
    r.logprobs = true;
    r.topLogprobs = 1;
    StepRecord step;
    step.piece = " there";
    step.sample.logit = 2;
    step.sample.logSumExp = 3;
    step.sample.top.push_back(CandidateRecord{5, 2, {}});
    const StepPieceLookup pieceOf = [](int32_t) { return std::optional<std::string>(" there"); };
    Json choice = {{"text", " there"}, {"logprobs", completionLogprobs({step}, 1, pieceOf, 0)}};
    const std::vector<PromptTokenLogprob> prompt{{"", std::nullopt, {}}, {" Once", -1.5, {{" Once", -1.5}}}, {" upon", -0.25, {{" a", -0.1}}}};
    prependEcho(choice, "Once upon", prompt, true);
    EXPECT_EQ(choice["text"], "Once upon there");
    const Json& lp = choice["logprobs"];
    EXPECT_EQ(lp["tokens"], Json::parse(R"(["", " Once", " upon", " there"])"));
    EXPECT_EQ(lp["token_logprobs"], Json::parse(R"([null, -1.5, -0.25, -1.0])"));
    EXPECT_EQ(lp["top_logprobs"], Json::parse(R"([null, {" Once": -1.5}, {" a": -0.1}, {" there": -1.0}])"));
    EXPECT_EQ(lp["text_offset"], Json::parse(R"([0, 0, 5, 9])"));
    ASSERT_EQ(lp["inferscope"].size(), 4u);
    EXPECT_TRUE(lp["inferscope"][2].is_null());
    EXPECT_TRUE(lp["inferscope"][3].is_object());
}

TEST(OpenAiRequest, LogprobExtensionsAreReadAndBounded) {
    const std::string chat = R"({"messages":[{"role":"user","content":"hi"}],)";
    auto ok = parseServeRequest(chat + R"("prompt_logprobs":3,"logprobs":true,"top_logprobs":2,"logprob_token_ids":[5,0,7],"logprobs_mode":"processed_logprobs"})", Endpoint::Chat);
    ASSERT_TRUE(ok) << ok.error().message;
    EXPECT_EQ(ok->promptLogprobs, 3);
    EXPECT_EQ(ok->logprobTokenIds, (std::vector<int32_t>{5, 0, 7}));
    EXPECT_EQ(ok->logprobsMode, LogprobsMode::Processed);
    EXPECT_EQ(ok->sampler.finalTopN, 2);  // the drawn distribution's alternatives are recorded
    auto plain = parseServeRequest(chat + R"("logprobs":true,"top_logprobs":2,"logprobs_mode":"raw_logprobs"})", Endpoint::Chat);
    ASSERT_TRUE(plain);
    EXPECT_EQ(plain->logprobsMode, LogprobsMode::Raw);
    EXPECT_EQ(plain->sampler.finalTopN, 0);
    EXPECT_FALSE(plain->promptLogprobs);
    auto completion = parseServeRequest(R"({"prompt":"a","logprobs":0,"logprob_token_ids":[1],"prompt_logprobs":0})", Endpoint::Completion);
    ASSERT_TRUE(completion);
    EXPECT_EQ(completion->promptLogprobs, 0);

    struct Case {
        std::string fields;
        std::string param, message;
    };
    for (const Case& c : std::vector<Case>{
             {R"("prompt_logprobs":21)", "prompt_logprobs", "prompt_logprobs must be an integer between 0 and 20"},
             {R"("prompt_logprobs":-1)", "prompt_logprobs", "prompt_logprobs must be an integer between 0 and 20"},
             {R"("prompt_logprobs":"5")", "prompt_logprobs", "prompt_logprobs must be an integer between 0 and 20"},
             {R"("prompt_logprobs":1,"stream":true)", "prompt_logprobs", "prompt_logprobs is not available with stream: true"},
             {R"("logprob_token_ids":[1])", "logprob_token_ids", "logprob_token_ids needs logprobs: true"},
             {R"("logprobs":true,"logprob_token_ids":[1,1])", "logprob_token_ids", "logprob_token_ids names a token twice"},
             {R"("logprobs":true,"logprob_token_ids":[-3])", "logprob_token_ids", "logprob_token_ids must hold token ids (whole numbers from 0)"},
             {R"("logprobs":true,"logprob_token_ids":[1.5])", "logprob_token_ids", "logprob_token_ids must hold token ids (whole numbers from 0)"},
             {R"("logprobs":true,"logprob_token_ids":{"a":1})", "logprob_token_ids", "logprob_token_ids must be an array of token ids"},
             {R"("logprobs_mode":"raw_logits")", "logprobs_mode", R"(logprobs_mode must be "raw_logprobs" or "processed_logprobs")"},
             {R"("logprobs_mode":7)", "logprobs_mode", R"(logprobs_mode must be "raw_logprobs" or "processed_logprobs")"}}) {
        const ApiError e = errorOf(chat + c.fields + "}");
        EXPECT_EQ(e.status, 400) << c.fields;
        EXPECT_EQ(e.param, c.param) << c.fields;
        EXPECT_EQ(e.message, c.message) << c.fields;
    }
    std::string many = chat + R"("logprobs":true,"logprob_token_ids":[)";
    for (size_t i = 0; i <= kMaxLogprobTokenIds; ++i) many += (i ? "," : "") + std::to_string(i);
    EXPECT_EQ(errorOf(many + "]}").message, "logprob_token_ids may name at most 64 tokens");
    EXPECT_EQ(errorOf(R"({"prompt":"a","logprob_token_ids":[1]})", Endpoint::Completion).message,
              "logprob_token_ids needs logprobs (a number of alternatives, 0 or more)");
}

TEST(OpenAiResponse, ProcessedLogprobsAreOfTheDistributionDrawnFrom) {
    StepRecord s = sampleStep(" a");
    s.sample.pFinal = 0.5f;
    s.sample.finalTop = {{10, 0.5f}, {12, 0.25f}, {11, 0.25f}};  // ordered by final probability, not raw logit
    s.namedLogits = {1.0f, 3.0f};
    const std::vector<int32_t> named{13, 10};
    const Json raw = chatTokenLogprob(s, 2, pieces(), LogprobsMode::Raw, named);
    EXPECT_EQ(raw["logprob"].get<double>(), -1.0);
    EXPECT_EQ(raw["top_logprobs"][1]["token"], "\xe2\x80");
    const Json processed = chatTokenLogprob(s, 2, pieces(), LogprobsMode::Processed, named);
    EXPECT_DOUBLE_EQ(processed["logprob"].get<double>(), std::log(0.5));
    ASSERT_EQ(processed["top_logprobs"].size(), 2u);
    EXPECT_EQ(processed["top_logprobs"][0]["token"], "t10");
    EXPECT_EQ(processed["top_logprobs"][1]["token"], "t12");
    EXPECT_DOUBLE_EQ(processed["top_logprobs"][1]["logprob"].get<double>(), std::log(0.25));
    // The named tokens: raw in either mode, in the order asked.
    for (const Json* j : {&raw, &processed})
        EXPECT_EQ(dumpJson((*j)["token_id_logprobs"]),
                  R"([{"id":13,"token":"t13","logprob":-2.0},{"id":10,"token":"t10","logprob":0.0}])");
    EXPECT_FALSE(chatTokenLogprob(s, 2, pieces())["top_logprobs"].is_null());
    EXPECT_FALSE(chatTokenLogprob(s, 2, pieces()).contains("token_id_logprobs"));  // not asked: not there

    s.sample.pFinal = 0;  // a described pick the drawn distribution did not hold: OpenAI's floor
    EXPECT_EQ(chatTokenLogprob(s, 0, pieces(), LogprobsMode::Processed)["logprob"].get<double>(), -9999.0);

    const Json legacy = completionLogprobs({s}, 2, pieces(), 0, LogprobsMode::Processed, named);
    EXPECT_EQ(dumpJson(legacy["top_logprobs"][0]), R"({"t10":-0.6931471805599453,"t12":-1.3862943611198906})");
    EXPECT_EQ(legacy["token_id_logprobs"][0][1]["logprob"].get<double>(), 0.0);
}

TEST(OpenAiResponse, PromptLogprobsAreVllmsShape) {
    std::vector<PromptPositionLogprobs> positions(3);
    positions[0].id = 1;
    positions[1] = {12, -0.5, 1, {{12, -0.5}, {11, -1.5}}};
    positions[2] = {13, -4.0, 7, {{10, -0.25}, {11, -2.0}}};
    const Json j = promptLogprobsJson(positions, pieces());
    // Token 11 is part of a character: its text is dumped with U+FFFD in place of the bytes.
    std::string expected = R"([null,)"
                           R"({"12":{"logprob":-0.5,"rank":1,"decoded_token":"t12"},"11":{"logprob":-1.5,"rank":2,"decoded_token":"\ufffd"}},)"
                           R"({"13":{"logprob":-4.0,"rank":7,"decoded_token":"t13"},"10":{"logprob":-0.25,"rank":1,"decoded_token":"t10"},)"
                           R"("11":{"logprob":-2.0,"rank":2,"decoded_token":"\ufffd"}}])";
    for (size_t at; (at = expected.find("\\ufffd")) != std::string::npos;) expected.replace(at, 6, "\xEF\xBF\xBD");
    EXPECT_EQ(dumpJson(j), expected);
}

TEST(OpenAiResponse, EchoedPromptTokensHaveNoNamedLogprobs) {
    StepRecord step = sampleStep(" there");
    step.namedLogits = {2.0f};
    const std::vector<int32_t> named{4};
    Json choice = {{"text", " there"}, {"logprobs", completionLogprobs({step}, 0, pieces(), 0, LogprobsMode::Raw, named)}};
    prependEcho(choice, "Once", {{"Once", std::nullopt, {}}}, true);
    const Json& lp = choice["logprobs"];
    EXPECT_EQ(dumpJson(lp["token_id_logprobs"]), R"([null,[{"id":4,"token":"t4","logprob":-1.0}]])");
    EXPECT_EQ(lp.back().size(), 2u);  // inferscope stays the last member
    EXPECT_TRUE(lp.back()[0].is_null());
}
