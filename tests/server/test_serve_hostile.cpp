// `inferscope-cli serve` under hostile traffic on loopback: what an attacker who can reach the port
// (or a web page in the user's browser) sends. Each case asserts the status a client gets, that
// the server lives and still answers, and that its resident memory grew by less than 64 MiB.
// Every loop is bounded; the slow clients come from other loopback addresses (127.0.0.2...).
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>

#include <atomic>
#include <nlohmann/json.hpp>
#include <thread>

#include "model_test_helpers.h"
#include "serve_process.h"

using nlohmann::json;
using inferscope::testing_serve::ServeProcess;
using namespace inferscope::testing_http;

namespace {

const std::string kModel = inferscope::testing_model::kStories;
constexpr long kMaxGrowthKiB = 64 * 1024;

std::string postHead(const std::string& path, const std::vector<std::string>& headers) {
    std::string r = "POST " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\n";
    for (const auto& h : headers) r += h + "\r\n";
    return r + "\r\n";
}

// One request on its own connection; the response (or nothing) within `timeout`.
std::optional<Response> once(int port, const std::string& bytes, std::chrono::milliseconds timeout = std::chrono::seconds(30)) {
    const int fd = connectTo(port);
    if (fd < 0) return std::nullopt;
    sendAll(fd, bytes);
    auto r = readResponse(fd, timeout);
    ::close(fd);
    return r;
}

std::string errorCode(const Response& r) {
    const json j = json::parse(r.body, nullptr, false);
    return j.is_object() && j.contains("error") && j["error"]["code"].is_string() ? j["error"]["code"].get<std::string>() : "";
}

// The server still answers a small greedy completion.
void stillServes(const ServeProcess& s) {
    ASSERT_TRUE(s.alive());
    auto c = s.client();
    auto r = c.post("/v1/completions", R"({"prompt":"Once","max_tokens":3,"temperature":0})");
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 200) << r->body;
}

class Hostile : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        server_ = new ServeProcess({"--model", kModel, "--parallel", "2", "--read-timeout", "3"});
        ASSERT_GT(server_->port(), 0);
        ASSERT_TRUE(server_->waitReady());
    }
    static void TearDownTestSuite() {
        delete server_;
        server_ = nullptr;
    }
    void SetUp() override { rssBefore_ = server_->rssKiB(); }
    void TearDown() override {
        const long after = server_->rssKiB();
#ifndef INFERSCOPE_SANITIZED
        EXPECT_LT(after, rssBefore_ + kMaxGrowthKiB) << rssBefore_ << " KiB before, " << after << " KiB after";
#endif
        stillServes(*server_);
    }
    int port() const { return server_->port(); }
    static ServeProcess* server_;
    long rssBefore_ = 0;
};
ServeProcess* Hostile::server_ = nullptr;

}  // namespace

// JSON nested a million levels deep in every field the parser reads as a type: refused by depth
// before any parse (this killed the server by recursion when echoed into the 400).
TEST_F(Hostile, NestingAMillionLevelsDeepInEveryTypedField) {
    const std::string deep = std::string(1'000'000, '[') + std::string(1'000'000, ']');
    const std::string msg = R"({"role":"user","content":"hi"})";
    const std::vector<std::pair<std::string, std::string>> bodies = {
        {"stream", R"({"messages":[)" + msg + R"(],"stream":)" + deep + "}"},
        {"max_tokens", R"({"messages":[)" + msg + R"(],"max_tokens":)" + deep + "}"},
        {"temperature", R"({"messages":[)" + msg + R"(],"temperature":)" + deep + "}"},
        {"role", R"({"messages":[{"role":)" + deep + R"(,"content":"hi"}]})"},
        {"content", R"({"messages":[{"role":"user","content":)" + deep + "}]}"},
        {"model", R"({"model":)" + deep + R"(,"messages":[)" + msg + "]}"},
        {"stop", R"({"messages":[)" + msg + R"(],"stop":)" + deep + "}"},
        {"objects", std::string(1'000'000, '{')},
    };
    for (const auto& [field, body] : bodies) {
        const std::string path = field == "objects" ? "/v1/completions" : "/v1/chat/completions";
        auto r = once(port(), postHead(path, {"Content-Type: application/json", "Content-Length: " + std::to_string(body.size())}) + body);
        ASSERT_TRUE(r) << field;
        EXPECT_EQ(r->status, 400) << field;
        EXPECT_EQ(errorCode(*r), "invalid_json") << field;
        EXPECT_LT(r->body.size(), 400u) << field << ": nothing of the body is repeated";
        ASSERT_TRUE(server_->alive()) << field;
    }
}

// Bodies past the limit however framed: chunked (read and counted as it comes), with no length
// at all (411: HTTP/1.1 says it has none), announced too large (413 from the head), compressed (415).
TEST_F(Hostile, BodiesPastTheLimitHoweverFramed) {
    {
        const int fd = connectTo(port());
        // What the kernels buffer between the two ends (the server's receive buffer grows to a
        // few MiB on loopback) is not what the server read: a small send buffer here, a 10 s send
        // deadline, and 64 MiB on offer. A server that stops at its 4 MiB limit stops this well
        // before 32 MiB (10 MiB once went through whole into the buffers, and a 10 MiB offer
        // could not tell the two apart).
        const int sendBuffer = 64 * 1024;
        ::setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sendBuffer, sizeof sendBuffer);
        const timeval deadline{10, 0};
        ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &deadline, sizeof deadline);
        ASSERT_TRUE(sendAll(fd, postHead("/v1/completions", {"Content-Type: application/json", "Transfer-Encoding: chunked"})));
        std::optional<Response> r;
        std::thread reader([&] { r = readResponse(fd, std::chrono::seconds(30)); });
        const std::string chunk(64 * 1024, 'a');
        const std::string framed = "10000\r\n" + chunk + "\r\n";
        size_t sent = 0;
        for (int i = 0; i < 1024 && sendAll(fd, framed); ++i) sent += chunk.size();  // 64 MiB at most
        reader.join();
        ::close(fd);
        ASSERT_TRUE(r);
        EXPECT_EQ(r->status, 413);
        EXPECT_EQ(errorCode(*r), "request_too_large");
        EXPECT_LT(sent, size_t(32) << 20) << "the server read on past its limit";
    }
    auto unsized = once(port(), postHead("/v1/completions", {"Content-Type: application/json"}) + R"({"prompt":"a"})");
    ASSERT_TRUE(unsized);
    EXPECT_EQ(unsized->status, 411);
    auto announced = once(port(), postHead("/v1/completions", {"Content-Type: application/json", "Content-Length: 400000000"}));
    ASSERT_TRUE(announced);
    EXPECT_EQ(announced->status, 413);
    // 400 KB of gzip would inflate to 400 MB: never inflated, refused from the head.
    const std::string gzipBody(400 * 1024, '\x1f');
    auto gzip = once(port(), postHead("/v1/completions", {"Content-Type: application/json", "Content-Encoding: gzip",
                                                          "Content-Length: " + std::to_string(gzipBody.size())}) + gzipBody);
    ASSERT_TRUE(gzip);
    EXPECT_EQ(gzip->status, 415);
}

// A 64 MB header line: the head is bounded (16 KiB) and the connection answered 431 and closed.
TEST_F(Hostile, ASixtyFourMegabyteHeaderLine) {
    const int fd = connectTo(port());
    ASSERT_GE(fd, 0);
    std::optional<Response> r;
    std::thread reader([&] { r = readResponse(fd, std::chrono::seconds(30)); });
    sendAll(fd, "GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Filler: ");
    const std::string block(1 << 20, 'x');
    int sentMiB = 0;
    for (; sentMiB < 64 && sendAll(fd, block); ++sentMiB) {
    }
    reader.join();
    ::close(fd);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 431);
    EXPECT_LT(sentMiB, 64) << "the server kept reading the header";
}

// 100 clients trickling their heads (a byte every 200 ms) from ten other addresses: each costs the
// server a socket, /health still answers within 1 s every time, and each slow client is cut off
// once its head's deadline (here 3 s) passes.
TEST_F(Hostile, AHundredSlowClientsWhileHealthIsPolled) {
    constexpr int kSlow = 100;
    std::vector<int> slow;
    for (int i = 0; i < kSlow; ++i) {
        const std::string source = "127.0.0." + std::to_string(2 + i % 10);
        const int fd = connectTo(port(), 0, source.c_str());
        ASSERT_GE(fd, 0) << i;
        sendAll(fd, "POST /v1/completions HTTP/1.1\r\nHo");
        slow.push_back(fd);
    }
    std::atomic<bool> trickling{true};
    std::thread trickle([&] {
        for (int round = 0; round < 40 && trickling; ++round) {  // 8 s at most
            for (int fd : slow) ::send(fd, "s", 1, MSG_NOSIGNAL);
            std::this_thread::sleep_for(std::chrono::milliseconds(200));
        }
    });
    auto c = server_->client();
    double slowest = 0;
    for (int i = 0; i < 20; ++i) {
        const auto t0 = std::chrono::steady_clock::now();
        auto r = c.get("/health");
        const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        ASSERT_TRUE(r);
        EXPECT_EQ(r->status, 200);
        if (i == 0) EXPECT_GE(json::parse(r->body)["connections"].get<int>(), kSlow);
        slowest = std::max(slowest, seconds);
    }
    EXPECT_LT(slowest, 1.0);
    // Every slow client gets 408 and its connection closed when its head's 3 s run out.
    int cut = 0;
    for (int fd : slow) {
        auto r = readResponse(fd, std::chrono::seconds(10));
        if (r && r->status == 408) ++cut;
    }
    trickling = false;
    trickle.join();
    for (int fd : slow) ::close(fd);
    EXPECT_EQ(cut, kSlow);
    std::printf("/health under %d slow clients: slowest answer %.1f ms\n", kSlow, slowest * 1000);
}

// One address may hold 64 connections; the 65th is answered 503 at once, others are not affected.
TEST_F(Hostile, ConnectionsPerAddressAreBounded) {
    std::vector<int> held;
    for (int i = 0; i < 64; ++i) {
        const int fd = connectTo(port(), 0, "127.0.0.77");
        ASSERT_GE(fd, 0);
        held.push_back(fd);
    }
    const int extra = connectTo(port(), 0, "127.0.0.77");
    ASSERT_GE(extra, 0);
    auto r = readResponse(extra, std::chrono::seconds(10));
    ::close(extra);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 503);
    EXPECT_EQ(errorCode(*r), "too_many_connections");
    auto c = server_->client();
    auto health = c.get("/health");
    ASSERT_TRUE(health);
    EXPECT_EQ(health->status, 200);
    for (int fd : held) ::close(fd);
}

// A 4 MB prompt is refused by its bytes before it is tokenized (the context holds far fewer
// tokens than the bytes could make), quickly and without memory to show for it.
TEST_F(Hostile, AFourMegabytePromptIsRefusedUntokenized) {
    std::string prompt;
    while (prompt.size() < (4u << 20) - 100) prompt += "once upon a time ";
    const std::string body = json({{"prompt", prompt}, {"max_tokens", 1}}).dump();
    const auto t0 = std::chrono::steady_clock::now();
    auto r = once(port(), postHead("/v1/completions", {"Content-Type: application/json", "Content-Length: " + std::to_string(body.size())}) + body);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 400) << r->body;
    EXPECT_EQ(errorCode(*r), "context_length_exceeded");
    std::printf("4 MB prompt refused in %.0f ms\n", seconds * 1000);
}

// What a web page can send without the user knowing: a form-style text/plain POST (no CORS
// preflight), a fetch from another origin, and a DNS-rebinding page's own Host name.
TEST_F(Hostile, BrowserStyleCrossSiteRequests) {
    const std::string body = R"({"prompt":"Once","max_tokens":2})";
    auto textPlain = once(port(), postHead("/v1/completions", {"Content-Type: text/plain", "Content-Length: " + std::to_string(body.size())}) + body);
    ASSERT_TRUE(textPlain);
    EXPECT_EQ(textPlain->status, 415);
    auto crossOrigin = once(port(), postHead("/v1/completions", {"Content-Type: application/json", "Origin: https://evil.example",
                                                                 "Content-Length: " + std::to_string(body.size())}) + body);
    ASSERT_TRUE(crossOrigin);
    EXPECT_EQ(crossOrigin->status, 403);
    EXPECT_EQ(errorCode(*crossOrigin), "origin_not_allowed");
    auto rebound = once(port(), "GET /v1/models HTTP/1.1\r\nHost: evil.example:8080\r\n\r\n");
    ASSERT_TRUE(rebound);
    EXPECT_EQ(rebound->status, 403);
    EXPECT_EQ(errorCode(*rebound), "host_not_allowed");
    EXPECT_EQ(rebound->body.find("evil"), std::string::npos);
}

// Waiting requests are served in the order they came.
TEST(ServeQueue, WaitingRequestsAreServedInOrder) {
    ServeProcess s({"--model", kModel, "--parallel", "1", "--queue", "8"});
    ASSERT_TRUE(s.port() > 0 && s.waitReady());
    // The slot's holder streams to a client that does not read: it stays busy until closed.
    const int holder = connectTo(s.port(), 4096);
    const std::string hold = json({{"prompt", "Once"}, {"stream", true}, {"logprobs", 20}, {"temperature", 1}, {"seed", 5}}).dump();
    ASSERT_TRUE(sendAll(holder, postHead("/v1/completions", {"Content-Type: application/json", "Content-Length: " + std::to_string(hold.size())}) + hold));
    auto health = [&](const char* key) {
        auto c = s.client();
        auto r = c.get("/health");
        return r ? json::parse(r->body)[key].get<int>() : -1;
    };
    for (int i = 0; i < 100 && health("slots_idle") != 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    std::vector<int> waiting;
    for (int k = 0; k < 5; ++k) {
        const int fd = connectTo(s.port());
        const std::string body = json({{"prompt", "Once"}, {"max_tokens", 2}, {"temperature", 0}}).dump();
        ASSERT_TRUE(sendAll(fd, postHead("/v1/completions", {"Content-Type: application/json", "Content-Length: " + std::to_string(body.size())}) + body));
        waiting.push_back(fd);
        for (int i = 0; i < 100 && health("queue") != k + 1; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(20));
        ASSERT_EQ(health("queue"), k + 1);
    }
    ::close(holder);
    std::vector<std::string> ids;
    for (int fd : waiting) {
        auto r = readResponse(fd, std::chrono::seconds(30));
        ::close(fd);
        ASSERT_TRUE(r);
        ASSERT_EQ(r->status, 200) << r->body;
        ids.push_back(json::parse(r->body)["id"]);
    }
    // The ids count the requests in the order they got the slot.
    EXPECT_TRUE(std::is_sorted(ids.begin(), ids.end())) << ids[0] << " ... " << ids.back();
}

// SIGTERM while an answer streams: the stream ends with finish_reason "abort" and [DONE], a request
// still waiting gets 503, and the process exits within 2 s.
TEST(ServeShutdown, SigtermEndsStreamsAndExitsWithinTwoSeconds) {
    ServeProcess s({"--model", kModel, "--parallel", "1", "--queue", "4"});
    ASSERT_TRUE(s.port() > 0 && s.waitReady());
    const int streamFd = connectTo(s.port());
    const std::string body = json({{"prompt", "Once"}, {"stream", true}, {"max_tokens", 100000}, {"temperature", 1}, {"seed", 3}}).dump();
    ASSERT_TRUE(sendAll(streamFd, postHead("/v1/completions", {"Content-Type: application/json", "Content-Length: " + std::to_string(body.size())}) + body));
    Reader first(streamFd, std::chrono::seconds(10), 1 << 20);
    ASSERT_TRUE(first.until("data: "));  // streaming
    const int queuedFd = connectTo(s.port());
    const std::string small = json({{"prompt", "Once"}, {"max_tokens", 2}}).dump();
    ASSERT_TRUE(sendAll(queuedFd, postHead("/v1/completions", {"Content-Type: application/json", "Content-Length: " + std::to_string(small.size())}) + small));
    for (int i = 0; i < 100; ++i) {
        auto c = s.client();
        auto r = c.get("/health");
        if (r && json::parse(r->body)["queue"] == 1) break;
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    const auto t0 = std::chrono::steady_clock::now();
    ASSERT_EQ(::kill(s.pid(), SIGTERM), 0);
    const std::string rest = first.rest();
    const auto queued = readResponse(queuedFd, std::chrono::seconds(5));
    bool exited = false;
    int status = 0;
    while (std::chrono::steady_clock::now() - t0 < std::chrono::seconds(3)) {
        if (::waitpid(s.pid(), &status, WNOHANG) == s.pid()) {
            exited = true;
            break;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    ::close(streamFd);
    ::close(queuedFd);
    EXPECT_NE(rest.find(R"("finish_reason":"abort")"), std::string::npos) << rest.substr(rest.size() > 400 ? rest.size() - 400 : 0);
    EXPECT_NE(rest.find("data: [DONE]"), std::string::npos);
    ASSERT_TRUE(queued);
    EXPECT_EQ(queued->status, 503);
    EXPECT_EQ(errorCode(*queued), "server_shutting_down");
    ASSERT_TRUE(exited) << "still running after " << seconds << " s";
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    EXPECT_LT(seconds, 2.0);
    s.forgetExited();
}
