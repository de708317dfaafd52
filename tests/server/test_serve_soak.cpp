// A soak: 32 clients streaming answers from one `serve` (8 slots, their decode steps batched, the
// rest waiting in line) for
// INFERSCOPE_SOAK_SECONDS (default 300). Every answer must arrive whole (its chunked framing
// closed, a finish_reason, [DONE], the streamed text equal to the usage's token count in pieces),
// none refused, and the server's resident memory flat: after a minute's warm-up it may not grow by
// more than 16 MiB to the end.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <thread>

#include "model_test_helpers.h"
#include "serve_process.h"

using nlohmann::json;
using inferscope::testing_serve::ServeProcess;
using namespace inferscope::testing_http;

namespace {

int soakSeconds() {
    const char* v = std::getenv("INFERSCOPE_SOAK_SECONDS");
    return v && *v ? std::max(10, std::atoi(v)) : 300;
}

// One streamed answer checked whole; the reason it is not, or "".
std::string checkStream(const Response& r) {
    if (r.status != 200) return "status " + std::to_string(r.status) + ": " + r.body.substr(0, 200);
    if (!r.complete) return "the chunked body was cut";
    std::string finish;
    int chunks = 0, completionTokens = -1;
    bool done = false;
    size_t at = 0;
    while ((at = r.body.find("data: ", at)) != std::string::npos) {
        const size_t end = r.body.find("\n\n", at);
        if (end == std::string::npos) return "an event without its end";
        const std::string data = r.body.substr(at + 6, end - at - 6);
        at = end + 2;
        if (data == "[DONE]") {
            done = true;
            continue;
        }
        const json e = json::parse(data, nullptr, false);
        if (e.is_discarded()) return "an event that is not JSON";
        if (e.contains("usage") && e["usage"].is_object()) completionTokens = e["usage"]["completion_tokens"];
        if (e["choices"].empty()) continue;
        ++chunks;
        if (!e["choices"][0]["finish_reason"].is_null()) finish = e["choices"][0]["finish_reason"];
    }
    if (!done) return "no [DONE]";
    if (finish != "stop" && finish != "length") return "finish_reason '" + finish + "'";
    if (completionTokens < 1) return "no usage";
    if (chunks < 1) return "no chunk";
    return "";
}

}  // namespace

TEST(ServeSoak, ThirtyTwoStreamingClientsForMinutes) {
    ServeProcess s({"--model", inferscope::testing_model::kStories, "--parallel", "8", "--queue", "32", "--log-file", "/dev/null"});
    ASSERT_TRUE(s.port() > 0 && s.waitReady());
    const int seconds = soakSeconds();
    const auto start = std::chrono::steady_clock::now();
    const auto end = start + std::chrono::seconds(seconds);
    const auto warm = start + std::chrono::seconds(std::min(60, seconds / 5));
    std::atomic<long> rssWarm{-1};
    std::atomic<int> answers{0}, bad{0};
    std::mutex firstBadMutex;
    std::string firstBad;
    std::vector<std::thread> clients;
    for (int k = 0; k < 32; ++k)
        clients.emplace_back([&, k] {
            Client c(s.port());
            for (int i = 0; std::chrono::steady_clock::now() < end && i < 100000; ++i) {
                const bool chat = (k + i) % 3 == 0;
                json body = {{"stream", true}, {"max_tokens", 8 + (k * 7 + i * 13) % 56}, {"temperature", 0.9}, {"seed", k * 1000 + i},
                             {"stream_options", {{"include_usage", true}}}};
                if (i % 4 == 1) body["logprobs"] = chat ? json(true) : json(5);
                if (i % 4 == 1 && chat) body["top_logprobs"] = 5;
                if (chat) body["messages"] = {{{"role", "user"}, {"content", "Tell me about a cat called " + std::to_string(k)}}};
                else body["prompt"] = "Once upon a time " + std::to_string(i);
                auto r = c.post(chat ? "/v1/chat/completions" : "/v1/completions", body.dump());
                const std::string why = r ? checkStream(*r) : std::string("no response");
                if (why.empty()) ++answers;
                else {
                    ++bad;
                    std::lock_guard lock(firstBadMutex);
                    if (firstBad.empty()) firstBad = why;
                }
                if (k == 0 && rssWarm < 0 && std::chrono::steady_clock::now() >= warm) rssWarm = s.rssKiB();
            }
        });
    for (auto& t : clients) t.join();
    const long rssEnd = s.rssKiB();
    std::printf("soak: %d s, %d answers, %d bad; RSS %ld KiB after warm-up, %ld KiB at the end\n", seconds, answers.load(), bad.load(),
                rssWarm.load(), rssEnd);
    EXPECT_EQ(bad.load(), 0) << firstBad;
    EXPECT_GT(answers.load(), 32);
    EXPECT_TRUE(s.alive());
    // The slots ran batched, and every request was counted and let go of its slot.
    Client c(s.port());
    auto slots = c.get("/slots");
    ASSERT_TRUE(slots && slots->status == 200);
    const json j = json::parse(slots->body);
    EXPECT_GE(j["largest_batch"].get<int>(), 2);
    EXPECT_EQ(j["queue"], 0);
    EXPECT_EQ(j["decoding"], 0);
    for (const json& slot : j["slots"]) EXPECT_EQ(slot["state"], "idle");
    auto health = c.get("/health");
    ASSERT_TRUE(health && health->status == 200);
    EXPECT_EQ(json::parse(health->body)["requests"].get<int>(), answers.load() + bad.load());
#ifndef INFERSCOPE_SANITIZED
    ASSERT_GT(rssWarm.load(), 0);
    EXPECT_LT(rssEnd, rssWarm + 16 * 1024);
#endif
}
