// Tools against a real `inferscope-cli serve` on loopback, one per chat template family: the tiny
// models have random weights and write nonsense, but with tool_choice required or a named function
// the grammar forces a call in the template's syntax whose arguments follow the schema. Streamed,
// the same greedy request gives the same call in tool_calls deltas, its arguments in pieces as they
// are generated. Every loop is bounded.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>

#include "model_test_helpers.h"
#include "serve_process.h"

using nlohmann::json;
using inferscope::testing_serve::ServeProcess;

namespace {

const std::string kArch = std::string(INFERSCOPE_SHARED_DIR) + "/models/arch/";

struct Family {
    std::string name;  // for messages
    std::string model;
    std::vector<std::string> options;
};

std::vector<Family> families() {
    return {{"llama3", kArch + "llama3-tiny.gguf", {}},
            {"qwen2 (chatml)", kArch + "qwen2-tiny.gguf", {}},
            {"qwen3 (chatml)", kArch + "qwen3-tiny.gguf", {}},
            {"phi3 (generic)", kArch + "phi3-tiny.gguf", {}},
            {"stories260K (llama2, generic)", inferscope::testing_model::kStories, {}},
            {"stories260K as mistral", inferscope::testing_model::kStories, {"--chat-template", "mistral"}}};
}

const json kTools = json::parse(R"([
  {"type":"function","function":{"name":"get_weather","description":"The weather in a city",
   "parameters":{"type":"object","properties":{"city":{"type":"string","enum":["Paris","Oslo"]},"metric":{"type":"boolean"}},
                 "required":["city","metric"],"additionalProperties":false}}},
  {"type":"function","function":{"name":"get_time","parameters":{"type":"object","properties":{},"additionalProperties":false}}}])");

json request(const json& choice) {
    return {{"messages", {{{"role", "user"}, {"content", "What is the weather in Oslo?"}}}},
            {"tools", kTools}, {"tool_choice", choice}, {"parallel_tool_calls", false}, {"temperature", 0}, {"max_tokens", 120}};
}

// The arguments a call of `name` may have under kTools' schemas.
void expectArgumentsFollowTheSchema(const std::string& name, const std::string& arguments, const std::string& family) {
    const json args = json::parse(arguments, nullptr, false);
    ASSERT_TRUE(args.is_object()) << family << ": " << arguments;
    if (name == "get_time") {
        EXPECT_TRUE(args.empty()) << family << ": " << arguments;
        return;
    }
    ASSERT_EQ(name, "get_weather") << family;
    EXPECT_EQ(args.size(), 2u) << family << ": " << arguments;
    ASSERT_TRUE(args.contains("city") && args["city"].is_string()) << family << ": " << arguments;
    EXPECT_TRUE(args["city"] == "Paris" || args["city"] == "Oslo") << family << ": " << arguments;
    EXPECT_TRUE(args.contains("metric") && args["metric"].is_boolean()) << family << ": " << arguments;
}

struct Streamed {
    std::string content, id, type, name, arguments, finish;
    size_t calls = 0, fragments = 0;  // chunks with a piece of arguments
};

// The chunks of a streamed answer put together as a client accumulates delta.tool_calls.
Streamed accumulate(const std::string& body) {
    Streamed s;
    std::istringstream events(body);
    for (std::string line; std::getline(events, line);) {
        if (line.rfind("data: ", 0) != 0 || line == "data: [DONE]") continue;
        const json chunk = json::parse(line.substr(6));
        const json& choice = chunk["choices"][0];
        const json& delta = choice["delta"];
        if (delta.contains("content") && delta["content"].is_string()) s.content += delta["content"].get<std::string>();
        if (delta.contains("tool_calls"))
            for (const json& call : delta["tool_calls"]) {
                s.calls = std::max(s.calls, call["index"].get<size_t>() + 1);
                if (call.contains("id")) s.id = call["id"];
                if (call.contains("type")) s.type = call["type"];
                if (call["function"].contains("name")) s.name = call["function"]["name"];
                s.arguments += call["function"]["arguments"].get<std::string>();
                if (!call["function"]["arguments"].get<std::string>().empty()) ++s.fragments;
            }
        if (!choice["finish_reason"].is_null()) s.finish = choice["finish_reason"];
    }
    return s;
}

// serve's arguments for a family's model.
std::vector<std::string> serveArgs(const Family& f) {
    std::vector<std::string> args{"--model", f.model};
    args.insert(args.end(), f.options.begin(), f.options.end());
    return args;
}

}  // namespace

TEST(ServeTools, EachTemplateFamilyAnswersAForcedCallWholeAndStreamed) {
    size_t served = 0;
    for (const Family& f : families()) {
        if (!std::filesystem::exists(f.model)) continue;
        ServeProcess server(serveArgs(f));
        ASSERT_TRUE(server.waitReady()) << f.name;
        ++served;
        for (const json& choice : {json("required"), json::parse(R"({"type":"function","function":{"name":"get_weather"}})")}) {
            const json body = request(choice);
            auto c = server.client();
            auto whole = c.post("/v1/chat/completions", body.dump());
            ASSERT_TRUE(whole) << f.name;
            ASSERT_EQ(whole->status, 200) << f.name << ": " << whole->body;
            const json r = json::parse(whole->body);
            const json& choice0 = r["choices"][0];
            EXPECT_EQ(choice0["finish_reason"], "tool_calls") << f.name << ": " << whole->body;
            EXPECT_TRUE(choice0["message"]["content"].is_null()) << f.name << ": " << whole->body;
            ASSERT_EQ(choice0["message"]["tool_calls"].size(), 1u) << f.name << ": " << whole->body;
            const json& call = choice0["message"]["tool_calls"][0];
            EXPECT_EQ(call["type"], "function");
            EXPECT_EQ(call["id"].get<std::string>().rfind("call_", 0), 0u);
            const std::string name = call["function"]["name"];
            if (choice.is_object()) EXPECT_EQ(name, "get_weather") << f.name;
            const std::string arguments = call["function"]["arguments"];
            expectArgumentsFollowTheSchema(name, arguments, f.name);

            json streamedBody = body;
            streamedBody["stream"] = true;
            auto s = c.post("/v1/chat/completions", streamedBody.dump());
            ASSERT_TRUE(s) << f.name;
            ASSERT_EQ(s->status, 200) << f.name;
            const Streamed st = accumulate(s->body);
            EXPECT_EQ(st.content, "") << f.name;  // the call's syntax is never streamed as text
            EXPECT_EQ(st.calls, 1u) << f.name;
            EXPECT_EQ(st.type, "function");
            EXPECT_EQ(st.id.rfind("call_", 0), 0u);
            EXPECT_EQ(st.name, name) << f.name;
            EXPECT_EQ(st.arguments, arguments) << f.name;
            if (name == "get_weather") EXPECT_GT(st.fragments, 3u) << f.name;  // the arguments as they are generated, not at the end
            EXPECT_EQ(st.finish, "tool_calls") << f.name;
        }
    }
    if (served == 0) GTEST_SKIP() << "no model found";
}

// Refusals come before the request waits for a slot, in OpenAI's error shape.
TEST(ServeTools, BadToolsAreRefusedInOpenAisShape) {
    ServeProcess server({"--model", inferscope::testing_model::kStories});
    ASSERT_TRUE(server.waitReady());
    json body = request("required");
    body["tools"][0]["function"]["parameters"]["properties"]["city"] = {{"type", "string"}, {"pattern", "^[A-Z]"}};
    auto c = server.client();
    auto r = c.post("/v1/chat/completions", body.dump());
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 400);
    EXPECT_EQ(r->body, R"({"error":{"message":"tools[0].function.parameters: JSON schema at /properties/#0: 'pattern' is not supported",)"
                       R"("type":"invalid_request_error","param":"tools","code":null}})");
    body = request(json::parse(R"({"type":"function","function":{"name":"get_news"}})"));
    r = c.post("/v1/chat/completions", body.dump());
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 400);
    EXPECT_EQ(r->body, R"({"error":{"message":"tool_choice names a function that is not in tools","type":"invalid_request_error",)"
                       R"("param":"tool_choice","code":null}})");
}

// tool_choice auto: the tiny models answer in text (or a call); streamed, the same greedy request
// gives the same answer, the text held back while it might become a call sent in the end.
TEST(ServeTools, AutoAnswersTheSameWholeAndStreamed) {
    size_t served = 0;
    for (const Family& f : families()) {
        if (!std::filesystem::exists(f.model)) continue;
        ServeProcess server(serveArgs(f));
        ASSERT_TRUE(server.waitReady()) << f.name;
        ++served;
        json body = request("auto");
        body["max_tokens"] = 40;
        auto c = server.client();
        auto whole = c.post("/v1/chat/completions", body.dump());
        ASSERT_TRUE(whole) << f.name;
        ASSERT_EQ(whole->status, 200) << f.name << ": " << whole->body;
        const json answer = json::parse(whole->body);
        const json& choice = answer["choices"][0];
        body["stream"] = true;
        auto s = c.post("/v1/chat/completions", body.dump());
        ASSERT_TRUE(s) << f.name;
        const Streamed st = accumulate(s->body);
        EXPECT_EQ(st.finish, choice["finish_reason"]) << f.name;
        if (choice["message"].contains("tool_calls")) {
            EXPECT_EQ(st.name, choice["message"]["tool_calls"][0]["function"]["name"]) << f.name;
            EXPECT_EQ(st.arguments, choice["message"]["tool_calls"][0]["function"]["arguments"]) << f.name;
        } else {
            EXPECT_EQ(st.calls, 0u) << f.name;
            EXPECT_EQ(st.content, choice["message"]["content"]) << f.name;
        }
    }
    if (served == 0) GTEST_SKIP() << "no model found";
}

// The tools shown count in the prompt's bytes: tools longer than the context can hold are refused
// before anything is tokenized.
TEST(ServeTools, ToolsPastTheContextAreRefusedBeforeTokenizing) {
    ServeProcess server({"--model", inferscope::testing_model::kStories});
    ASSERT_TRUE(server.waitReady());
    json body = request("auto");
    body["tools"] = json::array();
    for (int i = 0; i < 15; ++i)  // 240 KB, within the tools' limit, far past 2,048 tokens
        body["tools"].push_back({{"type", "function"}, {"function", {{"name", "f" + std::to_string(i)}, {"description", std::string(16000, 'd')}}}});
    auto c = server.client();
    auto r = c.post("/v1/chat/completions", body.dump());
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 400);
    const json e = json::parse(r->body);
    EXPECT_EQ(e["error"]["code"], "context_length_exceeded");
    EXPECT_EQ(e["error"]["message"].get<std::string>().rfind("the prompt is longer than the context of ", 0), 0u) << r->body;
}
