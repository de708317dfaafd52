// `serve --parallel N` is one model with N slots whose decode steps run batched (engine_group.h),
// driven over loopback:
// - answers given at the same time are exactly the answers given alone (greedy, four prompts),
//   and the server did batch them;
// - GET /slots shows each slot's KV cache against its share of the --ctx budget, in exact bytes;
// - GET /metrics is Prometheus text whose counters follow the requests served;
// - a prompt that starts as another slot's cached sequence copies it (the shared prefix cache);
// - ignore_eos runs an answer that would end to max_tokens (what the throughput bench asks for);
// - both need the API key like the API; a budget too small for the slots is refused at start.
// Every loop is bounded.
#include <gtest/gtest.h>

#include <algorithm>

#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>
#include <thread>

#include "model_test_helpers.h"
#include "process_runner.h"
#include "raw_http.h"
#include "serve_process.h"

using nlohmann::json;
using inferscope::testing_serve::ServeProcess;

namespace {

const std::string kModel = inferscope::testing_model::kStories;
constexpr int kSlots = 4;
constexpr int kBudget = 1024;  // 256 positions a slot
// stories260K: 2 (K and V) × 5 layers × 4 KV heads × 8 dims × 4 bytes (F32 cache) a position.
constexpr uint64_t kKvBytesPerToken = 2 * 5 * 4 * 8 * 4;

const char* const kPrompts[kSlots] = {"Once upon a time", "Lily had a red ball.", "The cat sat", "Tom and his dog went to the park"};

json completion(const ServeProcess& s, const std::string& prompt, int maxTokens) {
    auto c = s.client();
    const json body = {{"prompt", prompt}, {"temperature", 0}, {"max_tokens", maxTokens}};
    auto r = c.post("/v1/completions", body.dump());
    if (!r || r->status != 200) return {};
    return json::parse(r->body, nullptr, false);
}

json getJson(const ServeProcess& s, const std::string& path) {
    auto c = s.client();
    auto r = c.get(path);
    if (!r || r->status != 200) return {};
    return json::parse(r->body, nullptr, false);
}

// The metrics as name (with labels) -> value; fails the test on a line that is not Prometheus text.
std::map<std::string, double> metrics(const ServeProcess& s) {
    auto c = s.client();
    auto r = c.get("/metrics");
    EXPECT_TRUE(r);
    if (!r) return {};
    EXPECT_EQ(r->status, 200);
    EXPECT_EQ(r->header("content-type"), "text/plain; version=0.0.4; charset=utf-8");
    static const std::regex sample(R"(^([a-z_]+(\{le="[0-9+Inf]+"\})?) ([0-9]+(\.[0-9]+)?(e[+-][0-9]+)?)$)");
    static const std::regex comment(R"(^# (HELP|TYPE) [a-z_]+ .+$)");
    std::map<std::string, double> out;
    std::istringstream lines(r->body);
    for (std::string line; std::getline(lines, line);) {
        std::smatch m;
        if (std::regex_match(line, comment)) continue;
        EXPECT_TRUE(std::regex_match(line, m, sample)) << "not Prometheus text: " << line;
        if (!m.empty()) out[m[1]] = std::stod(m[3]);
    }
    return out;
}

class ServeBatching : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        server_ = new ServeProcess({"--model", kModel, "--parallel", std::to_string(kSlots), "--ctx", std::to_string(kBudget)});
        ASSERT_GT(server_->port(), 0);
        ASSERT_TRUE(server_->waitReady());
    }
    static void TearDownTestSuite() {
        delete server_;
        server_ = nullptr;
    }
    static ServeProcess* server_;
};
ServeProcess* ServeBatching::server_ = nullptr;

}  // namespace

TEST_F(ServeBatching, AnswersAtTheSameTimeAreTheAnswersAloneAndRanBatched) {
    std::vector<std::string> alone;
    for (const char* p : kPrompts) {
        const json r = completion(*server_, p, 200);
        ASSERT_TRUE(r.contains("choices")) << p;
        alone.push_back(r["choices"][0]["text"]);
    }
    // Four clients at once, until the server has run a decode batch of two or more (the answers
    // are short: the first round may not overlap). Five rounds at most.
    int largest = 0;
    for (int round = 0; round < 5 && largest < 2; ++round) {
        std::vector<std::string> together(kSlots);
        std::vector<std::thread> clients;
        for (int i = 0; i < kSlots; ++i)
            clients.emplace_back([&, i] {
                const json r = completion(*server_, kPrompts[i], 200);
                if (r.contains("choices")) together[size_t(i)] = r["choices"][0]["text"];
            });
        for (auto& t : clients) t.join();
        for (int i = 0; i < kSlots; ++i) EXPECT_EQ(together[size_t(i)], alone[size_t(i)]) << "prompt " << i << ", round " << round;
        largest = getJson(*server_, "/slots").value("largest_batch", 0);
    }
    EXPECT_GE(largest, 2) << "four clients at once never decoded together";
    EXPECT_GE(metrics(*server_)["inferscope_batch_size_count"], 1.0);
}

TEST_F(ServeBatching, SlotsShowEachKvCacheAgainstItsShareOfTheBudget) {
    const json r = completion(*server_, "Lily had a red ball.", 20);
    ASSERT_TRUE(r.contains("usage"));
    // The cache holds the prompt and the answer but its last token (never run through the model).
    const int cached = r["usage"]["prompt_tokens"].get<int>() + r["usage"]["completion_tokens"].get<int>() - 1;
    // The answer is on the wire before its slot is handed back: the report may still say
    // "generating" for a moment (asked again until it does not, a bounded number of times).
    auto anyGenerating = [](const json& r) {
        return std::ranges::any_of(r["slots"], [](const json& s) { return s["state"] == "generating"; });
    };
    json slots = getJson(*server_, "/slots");
    ASSERT_TRUE(slots.contains("slots")) << slots.dump();
    for (int i = 0; i < 10000 && anyGenerating(slots); ++i) slots = getJson(*server_, "/slots");
    ASSERT_EQ(slots["slots"].size(), size_t(kSlots));
    EXPECT_EQ(slots["kv_budget_tokens"], kBudget);
    EXPECT_EQ(slots["kv_bytes_reserved"], uint64_t(kBudget) * kKvBytesPerToken);
    EXPECT_EQ(slots["queue"], 0);
    int holding = 0;
    for (const json& s : slots["slots"]) {
        EXPECT_EQ(s["state"], "idle");
        EXPECT_EQ(s["kv_capacity"], kBudget / kSlots);
        EXPECT_EQ(s["kv_bytes_reserved"], uint64_t(kBudget / kSlots) * kKvBytesPerToken);
        EXPECT_EQ(s["kv_bytes_used"], s["kv_tokens"].get<uint64_t>() * kKvBytesPerToken);
        if (s["kv_tokens"] == cached) ++holding;
    }
    EXPECT_GE(holding, 1) << slots.dump();
    auto c = server_->client();
    auto models = c.get("/v1/models");
    ASSERT_TRUE(models);
    EXPECT_EQ(json::parse(models->body)["data"][0]["context_length"], kBudget / kSlots);  // what one request may use
}

TEST_F(ServeBatching, MetricsCountTheRequestsServed) {
    auto before = metrics(*server_);
    EXPECT_EQ(before["inferscope_slots"], kSlots);
    EXPECT_EQ(before["inferscope_kv_cache_reserved_bytes"], double(uint64_t(kBudget) * kKvBytesPerToken));
    const json r = completion(*server_, "The cat sat", 17);
    ASSERT_TRUE(r.contains("usage"));
    auto after = metrics(*server_);
    // The slot is handed back just after the answer is sent (see above).
    for (int i = 0; i < 10000 && after["inferscope_slots_busy"] != 0.0; ++i) after = metrics(*server_);
    EXPECT_EQ(after["inferscope_requests_total"] - before["inferscope_requests_total"], 1.0);
    EXPECT_EQ(after["inferscope_generated_tokens_total"] - before["inferscope_generated_tokens_total"], r["usage"]["completion_tokens"].get<double>());
    EXPECT_EQ(after["inferscope_prompt_tokens_total"] - before["inferscope_prompt_tokens_total"], r["usage"]["prompt_tokens"].get<double>());
    // 17 tokens: the first from the prompt's pass, 16 decoded (alone: batches of one).
    EXPECT_EQ(after["inferscope_decode_tokens_total"] - before["inferscope_decode_tokens_total"], 16.0);
    EXPECT_EQ(after["inferscope_slots_busy"], 0.0);
    EXPECT_EQ(after["inferscope_queue_length"], 0.0);
    // The histogram is cumulative and its count is every batch.
    double last = 0;
    for (int b = 1; b <= kSlots; ++b) {
        const double v = after["inferscope_batch_size_bucket{le=\"" + std::to_string(b) + "\"}"];
        EXPECT_GE(v, last) << b;
        last = v;
    }
    EXPECT_EQ(after["inferscope_batch_size_bucket{le=\"+Inf\"}"], last);
    EXPECT_EQ(after["inferscope_batch_size_count"], last);
}

TEST_F(ServeBatching, IgnoreEosRunsTheAnswerToMaxTokens) {
    // stories260K ends this story (with BOS, as llama2.c's models do) after 213 tokens.
    auto c = server_->client();
    json body = {{"prompt", "The cat sat"}, {"temperature", 0}, {"max_tokens", 240}};
    auto ends = c.post("/v1/completions", body.dump());
    ASSERT_TRUE(ends && ends->status == 200);
    const json stopped = json::parse(ends->body);
    EXPECT_EQ(stopped["choices"][0]["finish_reason"], "stop");
    EXPECT_EQ(stopped["usage"]["completion_tokens"], 213);
    body["ignore_eos"] = true;
    auto runs = c.post("/v1/completions", body.dump());
    ASSERT_TRUE(runs && runs->status == 200);
    const json ran = json::parse(runs->body);
    EXPECT_EQ(ran["choices"][0]["finish_reason"], "length");
    EXPECT_EQ(ran["usage"]["completion_tokens"], 240);
    // The same answer up to where the first one ended.
    const std::string first = stopped["choices"][0]["text"];
    EXPECT_EQ(ran["choices"][0]["text"].get<std::string>().substr(0, first.size()), first);
}

// A prompt that starts as another slot's cached sequence (the system prompt every client sends)
// copies that slot's keys and values instead of computing them. Client A streams a long answer
// and, after its first event (its prompt has run), reads no more: with a small receive buffer the
// server's write waits and A's slot stays taken. Client B's prompt, the same start and another
// end, goes to another slot, copies A's positions, says so, and /metrics and /slots count them.
TEST_F(ServeBatching, APromptStartsFromAnotherSlotsCachedPrefix) {
    using namespace inferscope::testing_http;
    const std::string start = "Mia was a little girl who loved to play outside in the park with her big red ball and her friends.";
    const int holder = connectTo(server_->port(), 4096);
    ASSERT_GE(holder, 0);
    const std::string body = json({{"prompt", start + " One day"}, {"stream", true}, {"logprobs", 20}, {"temperature", 0},
                                   {"max_tokens", 200}, {"ignore_eos", true}})
                                 .dump();
    ASSERT_TRUE(sendAll(holder, requestText("POST", "/v1/completions", body)));
    Reader events(holder, std::chrono::seconds(60), 1 << 20);
    ASSERT_TRUE(events.until("data: ")) << "no first event from client A's stream";

    auto before = metrics(*server_);
    const json b = completion(*server_, start + " The dog", 8);
    ASSERT_TRUE(b.contains("timings")) << b.dump();
    auto after = metrics(*server_);
    ::close(holder);  // A leaves: its generation is cancelled
    const int copied = b["timings"]["prompt_tokens_copied"];
    EXPECT_GE(copied, 20);  // the start's words
    EXPECT_LT(copied, b["usage"]["prompt_tokens"].get<int>());
    EXPECT_EQ(b["usage"]["prompt_tokens_details"]["cached_tokens"], b["timings"]["prompt_tokens_reused"]);
    EXPECT_GE(b["timings"]["prompt_tokens_reused"].get<int>(), copied);
    EXPECT_EQ(after["inferscope_prefix_copied_tokens_total"] - before["inferscope_prefix_copied_tokens_total"], double(copied));
    EXPECT_EQ(after["inferscope_prefix_copies_total"] - before["inferscope_prefix_copies_total"], 1.0);
    EXPECT_EQ(getJson(*server_, "/slots")["prefix_tokens_copied"].get<double>(), after["inferscope_prefix_copied_tokens_total"]);
}

TEST(ServeBatchingSetup, SlotsAndMetricsNeedTheKeyAndATooSmallBudgetIsRefused) {
    const std::string key = "sk-test-0123456789abcdef";
    ServeProcess s({"--model", kModel, "--parallel", "2", "--api-key", key});
    ASSERT_TRUE(s.waitReady(key));
    for (const char* path : {"/slots", "/metrics"}) {
        auto c = s.client();
        auto r = c.get(path);
        ASSERT_TRUE(r);
        EXPECT_EQ(r->status, 401) << path;
        auto k = s.client(key);
        auto ok = k.get(path);
        ASSERT_TRUE(ok);
        EXPECT_EQ(ok->status, 200) << path;
    }

    const auto refused = inferscope::testing_process::runProcess(
        INFERSCOPE_CLI, {"serve", "--model", kModel, "--port", "0", "--parallel", "8", "--ctx", "100"});
    EXPECT_NE(refused.exitCode, 0);
    EXPECT_NE(refused.err.find("a context of 100 tokens split among 8 slots leaves 12 each; give at least 128"), std::string::npos)
        << refused.err;
}
