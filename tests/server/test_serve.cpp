// inferscope-cli serve driven over loopback: greedy answers equal the CLI's, streaming, every bad
// input a clear error, clients that leave, many connections, and load. Every loop is bounded.
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "model_test_helpers.h"
#include "process_runner.h"
#include "serve_process.h"

using nlohmann::json;
using inferscope::testing_serve::ServeProcess;

namespace {

const std::string kModel = inferscope::testing_model::kStories;

// Greedy answers of stories260K under a grammar (exact: any change in the grammar engine, the
// sampler or the model shows here).
const std::string kPersonAnswer = R"({ "name" : "It's a small" , "age" : -30 } )";
const std::string kYesNoAnswer = "yes, there.";
// The small model opens a member name and writes its story into it until max_tokens: any object
// is allowed, and nothing makes it close the string.
const std::string kObjectAnswer =
    R"({ " Anna said. Anna was very small and scared. Annagged and said, " :" said Annappyed. Anna was so happy.)";

json post(const ServeProcess& s, const std::string& path, const json& body, int expectStatus = 200) {
    auto c = s.client();
    auto r = c.post(path, body.dump());
    EXPECT_TRUE(r) << path;
    if (!r) return {};
    EXPECT_EQ(r->status, expectStatus) << r->body;
    return json::parse(r->body, nullptr, false);
}

using inferscope::testing_http::connectTo;
using inferscope::testing_http::readResponse;
using inferscope::testing_http::sendAll;

std::string rawRequest(const std::string& path, const std::string& body, size_t contentLength) {
    return "POST " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: " +
           std::to_string(contentLength) + "\r\n\r\n" + body;
}

uint64_t healthField(const ServeProcess& s, const char* key) {
    auto c = s.client();
    auto r = c.get("/health");
    return r && r->status == 200 ? json::parse(r->body)[key].get<uint64_t>() : ~0ull;
}

// Polls /health (at most 10 s) until `key` reaches `value`.
bool waitHealth(const ServeProcess& s, const char* key, uint64_t value) {
    for (int i = 0; i < 200; ++i) {
        if (healthField(s, key) == value) return true;
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return false;
}

class Serve : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        server_ = new ServeProcess({"--model", kModel, "--parallel", "2", "--queue", "16"});
        ASSERT_GT(server_->port(), 0);
        ASSERT_TRUE(server_->waitReady());
    }
    static void TearDownTestSuite() {
        delete server_;
        server_ = nullptr;
    }
    static ServeProcess* server_;
};
ServeProcess* Serve::server_ = nullptr;

}  // namespace

TEST_F(Serve, GreedyCompletionEqualsTheCli) {
    const json body = {{"model", "stories260K"}, {"prompt", "Once upon a time"}, {"temperature", 0}, {"max_tokens", 40}, {"logprobs", 5}};
    const json r = post(*server_, "/v1/completions", body);
    ASSERT_TRUE(r.contains("choices")) << r.dump();
    const json& lp = r["choices"][0]["logprobs"];
    const auto cli = inferscope::testing_process::runProcess(
        INFERSCOPE_CLI, {"generate", "--model", kModel, "--prompt", "Once upon a time", "--temperature", "0", "-n", "40", "--json"});
    ASSERT_EQ(cli.exitCode, 0) << cli.err;
    std::istringstream lines(cli.out);
    std::vector<json> tokens;
    json done;
    for (std::string line; std::getline(lines, line);) {
        const json e = json::parse(line);
        if (e["event"] == "token" && !e["end_of_generation"].get<bool>()) tokens.push_back(e);
        if (e["event"] == "done") done = e;
    }
    ASSERT_EQ(lp["tokens"].size(), tokens.size());
    ASSERT_FALSE(tokens.empty());
    for (size_t i = 0; i < tokens.size(); ++i) {
        EXPECT_EQ(lp["inferscope"][i]["id"], tokens[i]["id"]) << i;
        const double cliLogprob = tokens[i]["logit"].get<double>() - tokens[i]["log_sum_exp"].get<double>();
        EXPECT_NEAR(lp["token_logprobs"][i].get<double>(), cliLogprob, 1e-4) << i;
        EXPECT_EQ(lp["top_logprobs"][i].size(), 5u);
    }
    EXPECT_EQ(r["choices"][0]["text"], done["text"]);
    EXPECT_EQ(r["usage"]["completion_tokens"], done["generated_tokens"]);
    EXPECT_EQ(r["usage"]["prompt_tokens"], done["prompt_tokens"]);
    EXPECT_EQ(r["choices"][0]["finish_reason"], done["reason"] == "length" ? "length" : "stop");
    EXPECT_GT(r["timings"]["decode_tokens_per_s"].get<double>(), 0.0);
}

TEST_F(Serve, ChatStreamsTheSameAnswerAsWhole) {
    json body = {{"messages", {{{"role", "system"}, {"content", "Tell a story."}}, {{"role", "user"}, {"content", "Lily had a cat."}}}},
                 {"temperature", 0.8}, {"seed", 7}, {"max_tokens", 30}, {"logprobs", true}, {"top_logprobs", 3}};
    const json whole = post(*server_, "/v1/chat/completions", body);
    ASSERT_EQ(whole["object"], "chat.completion") << whole.dump();
    const std::string text = whole["choices"][0]["message"]["content"];
    EXPECT_FALSE(text.empty());
    body["stream"] = true;
    body["stream_options"] = {{"include_usage", true}};
    auto c = server_->client();
    auto r = c.post("/v1/chat/completions", body.dump());
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 200);
    EXPECT_EQ(r->header("content-type"), "text/event-stream");
    std::istringstream events(r->body);
    std::string streamed, finish;
    size_t listed = 0;
    std::vector<std::string> datas;
    for (std::string line; std::getline(events, line);)
        if (line.rfind("data: ", 0) == 0) datas.push_back(line.substr(6));
    ASSERT_GE(datas.size(), 3u);
    EXPECT_EQ(datas.back(), "[DONE]");
    const json usage = json::parse(datas[datas.size() - 2]);
    // The same counts; the second time, every prompt token but the last was already cached.
    json counts = usage["usage"], wholeCounts = whole["usage"];
    EXPECT_EQ(counts["prompt_tokens_details"]["cached_tokens"], counts["prompt_tokens"].get<int>() - 1);
    counts.erase("prompt_tokens_details");
    wholeCounts.erase("prompt_tokens_details");
    EXPECT_EQ(counts, wholeCounts);
    EXPECT_TRUE(usage["choices"].empty());
    for (size_t i = 0; i + 2 < datas.size(); ++i) {
        const json chunk = json::parse(datas[i]);
        EXPECT_EQ(chunk["object"], "chat.completion.chunk");
        const json& choice = chunk["choices"][0];
        if (i == 0) {
            EXPECT_EQ(choice["delta"]["role"], "assistant");
        }
        if (choice["delta"].contains("content")) streamed += choice["delta"]["content"].get<std::string>();
        if (!choice["finish_reason"].is_null()) finish = choice["finish_reason"];
        if (!choice["logprobs"].is_null())
            for (const json& t : choice["logprobs"]["content"]) {
                EXPECT_EQ(t["top_logprobs"].size(), 3u);
                // The second request reuses the first one's cached prompt: its prefill batches differ, so do the last bits.
                EXPECT_NEAR(t["logprob"].get<double>(), whole["choices"][0]["logprobs"]["content"][listed]["logprob"].get<double>(), 1e-4);
                ++listed;
            }
    }
    EXPECT_EQ(streamed, text);
    EXPECT_EQ(finish, whole["choices"][0]["finish_reason"]);
    EXPECT_EQ(listed, whole["choices"][0]["logprobs"]["content"].size());
}

// A last message from the assistant is continued (llama.cpp's server does so, vLLM with
// continue_final_message): greedy, the answer cut after a word and sent back as the assistant's
// goes on exactly as the whole answer did. The app branches from an alternative token this way.
TEST_F(Serve, ALastAssistantMessageIsContinued) {
    const json user = {{"role", "user"}, {"content", "Lily had a cat."}};
    const json whole = post(*server_, "/v1/chat/completions", {{"messages", {user}}, {"temperature", 0}, {"max_tokens", 30}});
    const std::string text = whole["choices"][0]["message"]["content"];
    const size_t cut = text.find(' ', 8);  // after the second word or so, before a space
    ASSERT_NE(cut, std::string::npos) << text;
    const json answerSoFar = {{"role", "assistant"}, {"content", text.substr(0, cut)}};
    for (const json& flag : {json(nullptr), json(true)}) {
        json body = {{"messages", {user, answerSoFar}}, {"temperature", 0}, {"max_tokens", 30}};
        if (!flag.is_null()) body["continue_final_message"] = flag;
        const json rest = post(*server_, "/v1/chat/completions", body);
        ASSERT_TRUE(rest.contains("choices")) << rest.dump();
        const std::string more = rest["choices"][0]["message"]["content"];
        const size_t n = std::min(more.size(), text.size() - cut);  // the continuation runs 30 tokens past the cut
        ASSERT_GE(n, 10u) << more;
        EXPECT_EQ(text.substr(cut, n), more.substr(0, n)) << "whole: " << text << "\ncontinued: " << text.substr(0, cut) << "|" << more;
    }
    // Told not to continue, the same messages close that turn: another prompt, another answer.
    const json closed = post(*server_, "/v1/chat/completions",
                             {{"messages", {user, answerSoFar}}, {"temperature", 0}, {"max_tokens", 30}, {"continue_final_message", false}});
    EXPECT_GT(closed["usage"]["prompt_tokens"].get<int>(), whole["usage"]["prompt_tokens"].get<int>());
}

// logit_bias -100 on the token a greedy answer starts with: another first token, and the step's
// record shows the bias in the penalty stage (raw probability unchanged, next to nothing after).
TEST_F(Serve, LogitBiasSteersTheAnswerThroughThePenaltyStage) {
    const json plain = post(*server_, "/v1/completions", {{"prompt", "Once upon a time"}, {"temperature", 0}, {"max_tokens", 4}, {"logprobs", 5}});
    const int first = plain["choices"][0]["logprobs"]["inferscope"][0]["id"];
    const json biased = post(*server_, "/v1/completions",
                             {{"prompt", "Once upon a time"}, {"temperature", 0}, {"max_tokens", 4}, {"logprobs", 5},
                              {"logit_bias", {{std::to_string(first), -100}}}});
    const json& step = biased["choices"][0]["logprobs"]["inferscope"][0];
    EXPECT_NE(step["id"].get<int>(), first);
    bool seen = false;
    for (const json& c : step["top"])
        if (c["id"] == first) {
            seen = true;
            EXPECT_GT(c["stages"]["raw"].get<double>(), 0.1);
            EXPECT_LT(c["stages"]["penalty"].get<double>(), 1e-30);
        }
    EXPECT_TRUE(seen) << step.dump();
    // A token past the vocabulary is refused by name.
    const json past = post(*server_, "/v1/completions", {{"prompt", "a"}, {"logit_bias", {{"99999", 1}}}}, 400);
    EXPECT_EQ(past["error"]["param"], "logit_bias");
}

TEST_F(Serve, ModelsAndHealth) {
    auto c = server_->client();
    auto m = c.get("/v1/models");
    ASSERT_TRUE(m);
    EXPECT_EQ(json::parse(m->body)["data"][0]["id"], "stories260K");
    EXPECT_EQ(healthField(*server_, "slots"), 2u);
}

TEST_F(Serve, BadInputGetsOpenAiErrors) {
    auto c = server_->client();
    auto expectError = [&](const std::string& path, const std::string& body, int status, const std::string& what) -> json {
        auto r = c.post(path, body);
        if (!r) {
            ADD_FAILURE() << what << ": no response";
            return json();
        }
        EXPECT_EQ(r->status, status) << what << ": " << r->body;
        const json e = json::parse(r->body, nullptr, false);
        EXPECT_TRUE(e.contains("error") && e["error"].contains("message") && e["error"].contains("type")) << what << ": " << r->body;
        return e;
    };
    const std::string chat = "/v1/chat/completions";
    expectError(chat, "{\"messages\": [", 400, "truncated JSON");
    expectError(chat, "{messages: 1}", 400, "malformed JSON");
    expectError(chat, "{\"messages\":[{\"role\":\"user\",\"content\":\"\xff\xfe\"}]}", 400, "invalid UTF-8");
    expectError(chat, R"({"messages":[{"role":"user","content":"hi"}],"logprobs":true,"top_logprobs":100})", 400, "top_logprobs 100");
    expectError(chat, R"({"messages":[{"role":"user","content":"hi"}],"max_tokens":-1})", 400, "negative max_tokens");
    expectError(chat, R"({"messages":[{"role":"user","content":"hi"}],"continue_final_message":true})", 400,
                "continue_final_message after a user message");
    const json notFound = expectError(chat, R"({"model":"gpt-4","messages":[{"role":"user","content":"hi"}]})", 404, "unknown model");
    EXPECT_EQ(notFound["error"]["code"], "model_not_found");
    expectError("/v1/nothing", "{}", 404, "unknown route");
    // A 10 MB body is refused from its head, before a byte of it is read.
    const int fd = connectTo(server_->port());
    ASSERT_TRUE(sendAll(fd, rawRequest(chat, "", 10u << 20)));
    const auto big = readResponse(fd, std::chrono::seconds(30));
    ::close(fd);
    ASSERT_TRUE(big);
    EXPECT_EQ(big->status, 413);
    EXPECT_EQ(json::parse(big->body)["error"]["code"], "request_too_large");
    // Unknown fields are accepted.
    const json ok = post(*server_, chat, {{"messages", {{{"role", "user"}, {"content", "hi"}}}}, {"max_tokens", 3}, {"frobnicate", {{"x", 1}}}});
    EXPECT_EQ(ok["usage"]["completion_tokens"].get<int>() > 0, true);
}

TEST_F(Serve, ClientsThatLeaveCancelTheirGenerationAndTheServerStillServes) {
    const uint64_t before = healthField(*server_, "requests_cancelled");
    // Streamed: read the first event, then close. Unread, the answer fills the socket's buffers
    // (20 alternatives and the step record per token) and the server waits in its write, so it
    // cannot finish before we leave; it counts the generation cancelled, not finished.
    const std::string body = json({{"prompt", "Once"}, {"stream", true}, {"logprobs", 20}, {"temperature", 1}, {"seed", 1}}).dump();
    int fd = connectTo(server_->port(), 4096);
    ASSERT_GE(fd, 0);
    const std::string req = rawRequest("/v1/completions", body, body.size());
    ASSERT_EQ(::send(fd, req.data(), req.size(), 0), ssize_t(req.size()));
    std::string got;
    char buf[4096];
    for (int i = 0; i < 100 && got.find("data: ") == std::string::npos; ++i) {
        const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
        if (n <= 0) break;
        got.append(buf, size_t(n));
    }
    EXPECT_NE(got.find("data: "), std::string::npos);
    ::close(fd);
    EXPECT_TRUE(waitHealth(*server_, "requests_cancelled", before + 1));
    // Not streamed: the client leaves right after sending; this answer (seed 5) runs ~500 tokens,
    // and the cancel check polls the connection before every pass.
    const std::string whole = json({{"prompt", "Once"}, {"temperature", 1}, {"seed", 5}}).dump();
    fd = connectTo(server_->port());
    const std::string wholeRequest = rawRequest("/v1/completions", whole, whole.size());
    ASSERT_EQ(::send(fd, wholeRequest.data(), wholeRequest.size(), 0), ssize_t(wholeRequest.size()));
    ::close(fd);
    EXPECT_TRUE(waitHealth(*server_, "requests_cancelled", before + 2));
    // A truncated body (Content-Length larger than what is sent), then the client leaves.
    fd = connectTo(server_->port());
    const std::string half = rawRequest("/v1/completions", "{\"prompt\":\"On", 100);
    ::send(fd, half.data(), half.size(), 0);
    ::close(fd);
    // 200 connections opened and dropped, some mid-header.
    for (int i = 0; i < 200; ++i) {
        const int d = connectTo(server_->port());
        ASSERT_GE(d, 0) << i;
        if (i % 2) ::send(d, "POST /v1/comp", 13, 0);
        ::close(d);
    }
    EXPECT_TRUE(waitHealth(*server_, "slots_idle", 2));
    const json after = post(*server_, "/v1/completions", {{"prompt", "Once"}, {"max_tokens", 5}, {"temperature", 0}});
    EXPECT_EQ(after["usage"]["completion_tokens"], 5);
    EXPECT_TRUE(server_->alive());
}

TEST_F(Serve, EightClientsTwentyFiveRequestsEach) {
    // Each client's prompt, and its greedy answer asked once beforehand.
    std::vector<std::string> prompts, expected;
    for (int k = 0; k < 8; ++k) {
        prompts.push_back("Once upon a time there was a " + std::vector<std::string>{"cat", "dog", "girl", "boy", "tree", "bird", "king", "fish"}[size_t(k)]);
        expected.push_back(post(*server_, "/v1/completions", {{"prompt", prompts.back()}, {"max_tokens", 20}, {"temperature", 0}})["choices"][0]["text"]);
    }
    const long rssBefore = server_->rssKiB();
    std::atomic<int> correct{0}, failed{0};
    std::vector<std::thread> clients;
    for (int k = 0; k < 8; ++k)
        clients.emplace_back([&, k] {
            auto c = server_->client();
            for (int i = 0; i < 25; ++i) {
                const bool chat = i % 5 == 4;
                const json body = chat ? json{{"messages", {{{"role", "user"}, {"content", prompts[size_t(k)]}}}}, {"max_tokens", 8}, {"temperature", 0}}
                                       : json{{"prompt", prompts[size_t(k)]}, {"max_tokens", 20}, {"temperature", 0}, {"logprobs", 2}};
                auto r = c.post(chat ? "/v1/chat/completions" : "/v1/completions", body.dump());
                if (!r || r->status != 200) {
                    ++failed;
                    continue;
                }
                const json j = json::parse(r->body, nullptr, false);
                if (chat ? !j["choices"][0]["message"]["content"].is_string() : j["choices"][0]["text"] != expected[size_t(k)]) ++failed;
                else ++correct;
            }
        });
    for (auto& t : clients) t.join();
    EXPECT_EQ(correct.load(), 200);
    EXPECT_EQ(failed.load(), 0);
    const long rssAfter = server_->rssKiB();
    // Slots preallocate their caches: 200 requests must not grow the server by more than 64 MiB
    // (measured: 29 MiB before, 39 MiB after). Not under AddressSanitizer: its quarantine of freed
    // blocks, shadow memory and per-thread fake stacks grow with the connection threads (measured
    // +540 MiB for this load) and are not the server's; LeakSanitizer checks that build instead.
#ifndef INFERSCOPE_SANITIZED
    EXPECT_LT(rssAfter, rssBefore + 64 * 1024) << rssBefore << " KiB before, " << rssAfter << " KiB after";
#endif
    std::printf("server RSS: %ld KiB before the load, %ld KiB after\n", rssBefore, rssAfter);
    EXPECT_TRUE(server_->alive());
}

TEST(ServeOptions, ApiKeyIsRequiredOnEveryRequest) {
    ServeProcess s({"--model", kModel, "--api-key", "sekrit"});
    ASSERT_GT(s.port(), 0);
    ASSERT_TRUE(s.waitReady("sekrit"));
    auto anonymous = s.client();
    auto r = anonymous.get("/v1/models");
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 401);
    EXPECT_EQ(json::parse(r->body)["error"]["code"], "invalid_api_key");
    auto wrong = s.client("nope");
    EXPECT_EQ(wrong.post("/v1/completions", R"({"prompt":"a"})")->status, 401);
    auto right = s.client("sekrit");
    EXPECT_EQ(right.post("/v1/completions", R"({"prompt":"a","max_tokens":2})")->status, 200);
}

TEST(ServeOptions, BadOptionsAreRefused) {
    const auto r = inferscope::testing_process::runProcess(INFERSCOPE_CLI, {"serve", "--model", "/nonexistent.gguf", "--port", "0"});
    EXPECT_EQ(r.exitCode, 1);
    EXPECT_EQ(r.err, "inferscope-cli: no such model file: /nonexistent.gguf\n");
}

TEST(ServeOptions, PastTheQueueIs429) {
    // One slot, no queue. The holder asks for a long stream and reads none of it: once the
    // socket's buffers are full the server's write waits, and the slot stays taken.
    ServeProcess s({"--model", kModel, "--parallel", "1", "--queue", "0"});
    ASSERT_GT(s.port(), 0);
    ASSERT_TRUE(s.waitReady());
    const int holder = connectTo(s.port(), 4096);
    ASSERT_GE(holder, 0);
    const std::string body = json({{"prompt", "Once"}, {"stream", true}, {"logprobs", 20}, {"temperature", 1}, {"seed", 5}}).dump();
    const std::string req = rawRequest("/v1/completions", body, body.size());
    ASSERT_EQ(::send(holder, req.data(), req.size(), 0), ssize_t(req.size()));
    ASSERT_TRUE(waitHealth(s, "slots_idle", 0));
    auto c = s.client();
    auto r = c.post("/v1/completions", R"({"prompt":"a","max_tokens":2})");
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 429) << r->body;
    EXPECT_EQ(json::parse(r->body)["error"]["code"], "rate_limit_exceeded");
    ::close(holder);  // the holder leaves: its generation is cancelled and the slot serves again
    EXPECT_TRUE(waitHealth(s, "slots_idle", 1));
    EXPECT_EQ(c.post("/v1/completions", R"({"prompt":"a","max_tokens":2})")->status, 200);
}

// serve --draft: every slot drafts with its own draft model; greedy answers are the plain ones and
// the timings count the drafts as llama.cpp's server names them.
TEST(ServeOptions, SpeculativeDecodingGivesThePlainGreedyAnswerAndCountsDrafts) {
    const json body = {{"prompt", "Lily and Tom went to the park. Lily and Tom"}, {"temperature", 0}, {"max_tokens", 40}};
    ServeProcess plain({"--model", kModel});
    ServeProcess drafted({"--model", kModel, "--draft", kModel, "--draft-max", "3"});
    ServeProcess lookup({"--model", kModel, "--draft-ngram", "3"});
    for (const ServeProcess* s : {&plain, &drafted, &lookup}) ASSERT_TRUE(s->port() > 0 && s->waitReady());
    const json reference = post(plain, "/v1/completions", body);
    EXPECT_FALSE(reference["timings"].contains("draft_n"));
    for (const ServeProcess* s : {&drafted, &lookup}) {
        const json r = post(*s, "/v1/completions", body);
        EXPECT_EQ(r["choices"][0]["text"], reference["choices"][0]["text"]);
        ASSERT_TRUE(r["timings"].contains("draft_n")) << r.dump();
        EXPECT_LE(r["timings"]["draft_n_accepted"].get<int>(), r["timings"]["draft_n"].get<int>());
    }
    // The same model as its own draft: every drafted token accepted.
    const json self = post(drafted, "/v1/completions", body);
    EXPECT_GT(self["timings"]["draft_n"].get<int>(), 0);
    EXPECT_EQ(self["timings"]["draft_n_accepted"], self["timings"]["draft_n"]);
}

namespace {

// The whole text of a stream's deltas (chat or completions) and its finish reason.
std::pair<std::string, std::string> streamedText(const std::string& body) {
    std::istringstream events(body);
    std::string text, finish;
    for (std::string line; std::getline(events, line);) {
        if (line.rfind("data: ", 0) != 0 || line == "data: [DONE]") continue;
        const json chunk = json::parse(line.substr(6));
        if (!chunk.contains("choices") || chunk["choices"].empty()) continue;
        const json& choice = chunk["choices"][0];
        if (choice.contains("delta") && choice["delta"].contains("content")) text += choice["delta"]["content"].get<std::string>();
        if (choice.contains("text")) text += choice["text"].get<std::string>();
        if (!choice["finish_reason"].is_null()) finish = choice["finish_reason"];
    }
    return {text, finish};
}

}  // namespace

// response_format json_schema (strict): greedy, the answer is JSON with exactly the schema's members
// in its order and types, ended by the model's end of generation once the JSON is complete.
TEST_F(Serve, JsonSchemaResponseFormatGivesJsonThatFollowsIt) {
    // Ordered: "name" before "age" as sent (nlohmann::json would sort the members).
    using Ordered = nlohmann::ordered_json;
    const Ordered schema = Ordered::parse(R"({"type":"object","properties":{"name":{"type":"string","maxLength":12},
        "age":{"type":"integer"}},"required":["name","age"],"additionalProperties":false})");
    const Ordered body = {{"messages", {{{"role", "user"}, {"content", "Lily had a cat."}}}},
                          {"temperature", 0},
                          {"max_tokens", 80},
                          {"response_format", {{"type", "json_schema"}, {"json_schema", {{"name", "person"}, {"strict", true}, {"schema", schema}}}}}};
    auto c = server_->client();
    auto reply = c.post("/v1/chat/completions", body.dump());
    ASSERT_TRUE(reply);
    ASSERT_EQ(reply->status, 200) << reply->body;
    const json r = json::parse(reply->body);
    ASSERT_TRUE(r.contains("choices")) << r.dump();
    const std::string content = r["choices"][0]["message"]["content"];
    EXPECT_EQ(content, kPersonAnswer);
    EXPECT_EQ(r["choices"][0]["finish_reason"], "stop");
    const json parsed = json::parse(content, nullptr, false);
    ASSERT_TRUE(parsed.is_object()) << content;
    ASSERT_EQ(parsed.size(), 2u) << content;
    EXPECT_TRUE(parsed["name"].is_string());
    EXPECT_LE(parsed["name"].get<std::string>().size(), 12u);
    EXPECT_TRUE(parsed["age"].is_number_integer());
    EXPECT_LT(content.find("\"name\""), content.find("\"age\""));  // the schema's order
}

// llama.cpp's `grammar` on /v1/completions, and json_object streamed: the stream's text is the
// whole answer's.
TEST_F(Serve, GrammarOnCompletionsAndJsonObjectStreamed) {
    const json yesNo = post(*server_, "/v1/completions",
                            {{"prompt", "Was the cat happy?"}, {"temperature", 0}, {"max_tokens", 10},
                             {"grammar", "root ::= (\"yes\" | \"no\") \", \" [a-z]+ \".\""}});
    ASSERT_TRUE(yesNo.contains("choices")) << yesNo.dump();
    EXPECT_EQ(yesNo["choices"][0]["text"], kYesNoAnswer);

    json body = {{"messages", {{{"role", "user"}, {"content", "Tom saw a dog."}}}},
                 {"temperature", 0},
                 {"max_tokens", 60},
                 {"response_format", {{"type", "json_object"}}}};
    const json whole = post(*server_, "/v1/chat/completions", body);
    const std::string content = whole["choices"][0]["message"]["content"];
    EXPECT_EQ(content, kObjectAnswer);
    body["stream"] = true;
    auto c = server_->client();
    auto r = c.post("/v1/chat/completions", body.dump());
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 200);
    const auto [text, finish] = streamedText(r->body);
    EXPECT_EQ(text, content);
    EXPECT_EQ(finish, whole["choices"][0]["finish_reason"]);
}

// A grammar that does not compile is a 400 naming the field and the place, before it waits for a
// slot; nothing of it is repeated, and the server goes on serving.
TEST_F(Serve, ABadGrammarIsRefusedWithItsPlace) {
    const json bad = post(*server_, "/v1/completions", {{"prompt", "a"}, {"grammar", "root ::= ZQXitem"}}, 400);
    EXPECT_EQ(bad["error"]["param"], "grammar");
    EXPECT_EQ(bad["error"]["message"], "grammar line 1, column 10: a rule is used but never defined");
    const json deep = post(*server_, "/v1/completions", {{"prompt", "a"}, {"grammar", "root ::= " + std::string(200000, '(')}}, 400);
    EXPECT_EQ(deep["error"]["message"], "grammar line 1, column 74: groups nested more than 64 deep");
    const json schema = post(*server_, "/v1/chat/completions",
                             {{"messages", {{{"role", "user"}, {"content", "hi"}}}},
                              {"response_format", {{"type", "json_schema"}, {"json_schema", {{"name", "x"}, {"schema", {{"type", "ZQX"}}}}}}}},
                             400);
    EXPECT_EQ(schema["error"]["message"], "JSON schema at /: unknown type");
    EXPECT_EQ(healthField(*server_, "slots"), 2u);
}

// echo with logprobs, as an evaluation harness asks for a log-likelihood (max_tokens 0 or 1): the
// prompt's tokens with their log-probabilities, the first null, equal to `score`'s for the same
// text; streamed, the same prompt comes first.
TEST_F(Serve, EchoWithLogprobsScoresThePromptAsScoreDoes) {
    const std::string prompt = "Once upon a time there was a little girl";
    const json r = post(*server_, "/v1/completions",
                        {{"prompt", prompt}, {"echo", true}, {"logprobs", 1}, {"max_tokens", 0}, {"temperature", 0}});
    ASSERT_TRUE(r.contains("choices")) << r.dump();
    const json& choice = r["choices"][0];
    EXPECT_EQ(choice["text"], prompt);
    EXPECT_EQ(choice["finish_reason"], "length");
    const json& lp = choice["logprobs"];
    const int n = r["usage"]["prompt_tokens"];
    EXPECT_EQ(r["usage"]["completion_tokens"], 0);
    ASSERT_EQ(int(lp["tokens"].size()), n);
    EXPECT_TRUE(lp["token_logprobs"][0].is_null());
    EXPECT_TRUE(lp["top_logprobs"][0].is_null());

    const auto cli = inferscope::testing_process::runProcess(INFERSCOPE_CLI, {"score", "--model", kModel, "--prompt", prompt, "--json"});
    ASSERT_EQ(cli.exitCode, 0) << cli.err;
    std::istringstream lines(cli.out);
    std::vector<double> scored;  // log p of the token at position i + 1
    for (std::string line; std::getline(lines, line);) {
        const json e = json::parse(line);
        if (e["event"] == "score" && !e["next_p"].is_null()) scored.push_back(std::log(e["next_p"].get<double>()));
    }
    ASSERT_EQ(int(scored.size()), n - 1);
    double echoSum = 0, scoreSum = 0;
    for (int i = 1; i < n; ++i) {
        const double lpi = lp["token_logprobs"][i].get<double>();
        EXPECT_NEAR(lpi, scored[size_t(i - 1)], 1e-3) << i;  // prefill batches against one decode pass a position
        EXPECT_EQ(lp["top_logprobs"][i].size(), 1u);
        echoSum += lpi;
        scoreSum += scored[size_t(i - 1)];
    }
    EXPECT_NEAR(echoSum, scoreSum, 1e-3 * n);

    // One token more (lm-evaluation-harness asks max_tokens 1): the prompt's logprobs unchanged,
    // then the answer's token, its offset past the prompt.
    const json more = post(*server_, "/v1/completions",
                           {{"prompt", prompt}, {"echo", true}, {"logprobs", 1}, {"max_tokens", 1}, {"temperature", 0}});
    const json& mlp = more["choices"][0]["logprobs"];
    ASSERT_EQ(int(mlp["tokens"].size()), n + 1);
    for (int i = 1; i < n; ++i) EXPECT_EQ(mlp["token_logprobs"][i], lp["token_logprobs"][i]) << i;
    EXPECT_EQ(mlp["text_offset"][n], prompt.size());
    EXPECT_EQ(more["choices"][0]["text"].get<std::string>().rfind(prompt, 0), 0u);

    // Streamed: the first chunk is the prompt with its tokens, then the answer.
    auto c = server_->client();
    const json body = {{"prompt", prompt}, {"echo", true}, {"logprobs", 1}, {"max_tokens", 5}, {"temperature", 0}, {"stream", true}};
    auto s = c.post("/v1/completions", body.dump());
    ASSERT_TRUE(s);
    std::istringstream events(s->body);
    std::string line;
    while (std::getline(events, line) && line.rfind("data: ", 0) != 0) {}
    const json first = json::parse(line.substr(6));
    EXPECT_EQ(first["choices"][0]["text"], prompt);
    EXPECT_EQ(first["choices"][0]["logprobs"]["token_logprobs"], lp["token_logprobs"]);
    const json whole = post(*server_, "/v1/completions",
                            {{"prompt", prompt}, {"echo", true}, {"max_tokens", 5}, {"temperature", 0}});
    EXPECT_EQ(streamedText(s->body).first, whole["choices"][0]["text"]);
}

// vLLM's prompt_logprobs: the prompt's tokens scored as echo scores them, keyed by id with their
// rank; on chat beside the choices.
TEST_F(Serve, PromptLogprobsAreEchosScoresKeyedByIdWithRanks) {
    const std::string prompt = "Once upon a time there was a little girl";
    auto c = server_->client();  // read in the order sent: the prompt's own token comes first
    const json body = {{"prompt", prompt}, {"echo", true}, {"logprobs", 1}, {"prompt_logprobs", 2}, {"max_tokens", 1}, {"temperature", 0}};
    const auto reply = c.post("/v1/completions", body.dump());
    ASSERT_TRUE(reply && reply->status == 200);
    const auto r = nlohmann::ordered_json::parse(reply->body);
    ASSERT_TRUE(r.contains("choices")) << r.dump();
    const auto& choice = r["choices"][0];
    const auto& echoed = choice["logprobs"];
    const auto& pl = choice["prompt_logprobs"];
    const int n = r["usage"]["prompt_tokens"];
    ASSERT_EQ(int(pl.size()), n);
    EXPECT_TRUE(pl[0].is_null());
    for (int i = 1; i < n; ++i) {
        const auto& entry = pl[i];
        ASSERT_TRUE(entry.is_object()) << i;
        ASSERT_GE(entry.size(), 2u) << i;  // the prompt's token, then the alternatives it is not
        ASSERT_LE(entry.size(), 3u) << i;
        const auto& own = entry.begin().value();
        EXPECT_EQ(own["logprob"], echoed["token_logprobs"][i]) << i;
        EXPECT_EQ(own["decoded_token"], echoed["tokens"][i]) << i;
        const bool isTop = echoed["top_logprobs"][i].begin().key() == echoed["tokens"][i].get<std::string>();
        EXPECT_EQ(own["rank"] == 1, isTop) << i;
        for (const auto& [id, alt] : entry.items())
            if (alt["rank"] == 1) EXPECT_EQ(alt["decoded_token"].get<std::string>(), echoed["top_logprobs"][i].begin().key()) << i;
    }
    const json chat = post(*server_, "/v1/chat/completions",
                           {{"messages", {{{"role", "user"}, {"content", "Tim"}}}}, {"prompt_logprobs", 0}, {"max_tokens", 1}});
    ASSERT_TRUE(chat.contains("prompt_logprobs")) << chat.dump();
    EXPECT_EQ(chat["prompt_logprobs"].size(), chat["usage"]["prompt_tokens"].get<size_t>());
    EXPECT_EQ(chat["prompt_logprobs"][1].size(), 1u);  // no alternatives asked: the prompt's token alone
    const json streamed = post(*server_, "/v1/completions", {{"prompt", prompt}, {"prompt_logprobs", 1}, {"stream", true}}, 400);
    EXPECT_EQ(streamed["error"]["message"], "prompt_logprobs is not available with stream: true");
}

// logprob_token_ids: the raw log-probability of named tokens at every step, equal to the listed
// token's own where it is the one named.
TEST_F(Serve, NamedTokensAreScoredAtEveryStep) {
    const json body = {{"prompt", "Once upon a time"}, {"logprobs", 0}, {"max_tokens", 6}, {"temperature", 0}};
    const json first = post(*server_, "/v1/completions", body);
    const json& steps = first["choices"][0]["logprobs"]["inferscope"];
    ASSERT_EQ(steps.size(), 6u) << first.dump();
    const int32_t chosen0 = steps[0]["id"], chosen1 = steps[1]["id"];
    json named = body;
    named["logprob_token_ids"] = {chosen1, chosen0, 1};
    const json r = post(*server_, "/v1/completions", named);
    const json& lp = r["choices"][0]["logprobs"];
    EXPECT_EQ(lp["tokens"], first["choices"][0]["logprobs"]["tokens"]);
    ASSERT_EQ(lp["token_id_logprobs"].size(), 6u);
    for (size_t i = 0; i < 6; ++i) {
        const json& at = lp["token_id_logprobs"][i];
        ASSERT_EQ(at.size(), 3u);
        EXPECT_EQ(at[0]["id"], chosen1);
        EXPECT_EQ(at[2]["id"], 1);
        for (const json& t : at) EXPECT_LE(t["logprob"].get<double>(), 0.0);
    }
    EXPECT_EQ(lp["token_id_logprobs"][0][1]["logprob"], lp["token_logprobs"][0]);  // exactly the chosen token's
    EXPECT_EQ(lp["token_id_logprobs"][1][0]["logprob"], lp["token_logprobs"][1]);
    EXPECT_EQ(lp["token_id_logprobs"][0][1]["token"], lp["tokens"][0]);

    const json chat = post(*server_, "/v1/chat/completions",
                           {{"messages", {{{"role", "user"}, {"content", "Tim"}}}}, {"logprobs", true}, {"logprob_token_ids", {1, 2}}, {"max_tokens", 2}});
    ASSERT_TRUE(chat.contains("choices")) << chat.dump();
    for (const json& t : chat["choices"][0]["logprobs"]["content"]) EXPECT_EQ(t["token_id_logprobs"].size(), 2u);
    const json past = post(*server_, "/v1/completions", {{"prompt", "a"}, {"logprobs", 0}, {"logprob_token_ids", {512}}}, 400);
    EXPECT_EQ(past["error"]["message"], "logprob_token_ids names a token past the vocabulary of 512 tokens");
    EXPECT_EQ(past["error"]["param"], "logprob_token_ids");
}

// logprobs_mode processed_logprobs: the distribution each token was drawn from (the step record's
// p_final); greedy gives every pick 0 and no other alternative.
TEST_F(Serve, ProcessedLogprobsAreOfTheDistributionDrawnFrom) {
    json body = {{"messages", {{{"role", "user"}, {"content", "Tim"}}}}, {"logprobs", true}, {"top_logprobs", 3},
                 {"logprobs_mode", "processed_logprobs"}, {"max_tokens", 8}, {"temperature", 0.8}, {"top_k", 5}, {"seed", 11}};
    const json r = post(*server_, "/v1/chat/completions", body);
    const json& content = r["choices"][0]["logprobs"]["content"];
    ASSERT_FALSE(content.empty()) << r.dump();
    for (const json& t : content) {
        EXPECT_NEAR(t["logprob"].get<double>(), std::log(t["inferscope"]["p_final"].get<double>()), 1e-6);
        ASSERT_LE(t["top_logprobs"].size(), 3u);
        double mass = 0;
        for (size_t i = 0; i < t["top_logprobs"].size(); ++i) {
            mass += std::exp(t["top_logprobs"][i]["logprob"].get<double>());
            if (i > 0) EXPECT_LE(t["top_logprobs"][i]["logprob"], t["top_logprobs"][i - 1]["logprob"]);
        }
        EXPECT_LE(mass, 1.0 + 1e-6);
    }
    body["logprobs_mode"] = "raw_logprobs";
    const json raw = post(*server_, "/v1/chat/completions", body);
    ASSERT_EQ(raw["choices"][0]["message"], r["choices"][0]["message"]);  // the mode changes what is reported, not the answer
    body["temperature"] = 0;
    body["logprobs_mode"] = "processed_logprobs";
    const json greedy = post(*server_, "/v1/chat/completions", body);
    for (const json& t : greedy["choices"][0]["logprobs"]["content"]) {
        EXPECT_EQ(t["logprob"].get<double>(), 0.0);
        ASSERT_EQ(t["top_logprobs"].size(), 1u);
        EXPECT_EQ(t["top_logprobs"][0]["token"], t["token"]);
    }
}
