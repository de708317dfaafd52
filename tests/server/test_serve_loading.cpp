// OpenAiServer in this process: 503 (OpenAI's error JSON) while the slots load, then served.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <thread>

#include "model_test_helpers.h"
#include "raw_http.h"
#include "server/http_server.h"

using nlohmann::json;
using namespace inferscope;

TEST(ServeLoading, AnswersLoadingUntilEverySlotIsLoaded) {
    server::ServeOptions o;
    o.port = 0;
    o.parallel = 2;
    o.modelId = "stories260K";
    o.engine.modelPath = testing_model::kStories;
    server::OpenAiServer srv(o);
    std::string error;
    const auto port = srv.bind(error);
    ASSERT_TRUE(port) << error;
    std::thread listener([&srv] { srv.run(); });
    testing_http::Client c(*port);

    auto health = c.get("/health");
    ASSERT_TRUE(health);
    EXPECT_EQ(health->status, 503);
    EXPECT_EQ(json::parse(health->body)["error"]["code"], "model_loading");
    auto early = c.post("/v1/completions", R"({"prompt":"Once","max_tokens":2})");
    ASSERT_TRUE(early);
    EXPECT_EQ(early->status, 503);
    EXPECT_EQ(json::parse(early->body)["error"]["type"], "server_error");
    auto models = c.get("/v1/models");  // what is being loaded is known already
    ASSERT_TRUE(models);
    EXPECT_EQ(json::parse(models->body)["data"][0]["id"], "stories260K");

    ASSERT_TRUE(srv.loadSlots().has_value());
    health = c.get("/health");
    ASSERT_TRUE(health);
    EXPECT_EQ(health->status, 200);
    EXPECT_EQ(json::parse(health->body)["slots_idle"], 2);
    auto served = c.post("/v1/completions", R"({"prompt":"Once","max_tokens":2})");
    ASSERT_TRUE(served);
    EXPECT_EQ(served->status, 200);
    EXPECT_EQ(json::parse(served->body)["usage"]["completion_tokens"], 2);

    // A follow-up turn goes to the slot that holds its conversation: the first prompt is reused.
    const json first = {{"messages", {{{"role", "user"}, {"content", "Lily had a red ball."}}}}, {"max_tokens", 8}, {"temperature", 0}};
    auto a = c.post("/v1/chat/completions", first.dump());
    ASSERT_TRUE(a);
    const json answer = json::parse(a->body);
    json second = first;
    second["messages"].push_back({{"role", "assistant"}, {"content", answer["choices"][0]["message"]["content"]}});
    second["messages"].push_back({{"role", "user"}, {"content", "What did she do?"}});
    auto b = c.post("/v1/chat/completions", second.dump());
    ASSERT_TRUE(b);
    const json followUp = json::parse(b->body);
    EXPECT_GE(followUp["timings"]["prompt_tokens_reused"].get<int>(), answer["usage"]["prompt_tokens"].get<int>());
    EXPECT_LT(followUp["timings"]["prompt_tokens_reused"].get<int>(), followUp["usage"]["prompt_tokens"].get<int>());

    srv.shutdown();
    listener.join();
}
