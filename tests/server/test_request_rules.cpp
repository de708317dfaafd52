// The server's rules on a request before its body is parsed, without sockets: the head policy
// (Host against DNS rebinding, Origin against CSRF, route, method, key, body framing), API keys
// (several, compared whole, masked in the log), the JSON shape bound, and the access log's line.
#include <gtest/gtest.h>

#include <string>

#include "server/access_log.h"
#include "server/api_keys.h"
#include "server/json_shape.h"
#include "server/request_policy.h"

using namespace inferscope::server;
using inferscope::server::http::RequestHead;

namespace {

RequestHead post(std::string target = "/v1/chat/completions") {
    RequestHead h;
    h.method = "POST";
    h.target = std::move(target);
    h.host = "127.0.0.1:8080";
    h.contentType = "application/json";
    h.contentLength = 20;
    return h;
}

RequestHead get(std::string target) {
    RequestHead h;
    h.method = "GET";
    h.target = std::move(target);
    h.host = "localhost:8080";
    return h;
}

int statusOf(const HeadDecision& d) { return d.refusal ? d.refusal->status : 200; }
std::string codeOf(const HeadDecision& d) { return d.refusal ? d.refusal->code : ""; }

}  // namespace

TEST(RequestPolicy, ALoopbackServerAnswersOnlyRequestsNamingThisMachine) {
    const AccessPolicy loopback;
    for (const char* host : {"127.0.0.1", "127.0.0.1:8080", "localhost", "LOCALHOST:1", "[::1]:8080", "127.5.6.7", "localhost."}) {
        RequestHead h = get("/v1/models");
        h.host = host;
        EXPECT_EQ(statusOf(decideHead(h, loopback)), 200) << host;
    }
    // A rebinding page sends its own name; a malformed Host is not a name.
    for (const char* host : {"evil.example", "evil.example:8080", "127.0.0.1.evil.example", "128.0.0.1", "127.0.0.256", "[::2]", "localhost:x",
                             "local host", "127.0.0.1:80:80"}) {
        RequestHead h = get("/v1/models");
        h.host = host;
        const HeadDecision d = decideHead(h, loopback);
        ASSERT_TRUE(d.refusal) << host;
        EXPECT_TRUE(statusOf(d) == 403 || statusOf(d) == 400) << host;
        EXPECT_EQ(d.refusal->message.find(host), std::string::npos) << "the Host is repeated: " << host;
    }
    RequestHead noHost = get("/health");
    noHost.host.clear();
    EXPECT_EQ(statusOf(decideHead(noHost, loopback)), 400);
    // --allowed-hosts adds names; a server on all interfaces checks only when given some.
    AccessPolicy proxied;
    proxied.allowedHosts = {"llm.internal"};
    RequestHead named = get("/health");
    named.host = "LLM.internal:443";
    EXPECT_EQ(statusOf(decideHead(named, proxied)), 200);
    AccessPolicy open;
    open.loopbackBind = false;
    named.host = "anything.example";
    EXPECT_EQ(statusOf(decideHead(named, open)), 200);
    EXPECT_EQ(codeOf(decideHead(named, proxied)), "host_not_allowed");
}

TEST(RequestPolicy, CrossOriginRequestsOnlyFromListedOrigins) {
    AccessPolicy policy;
    RequestHead h = post();
    h.origin = "https://evil.example";
    EXPECT_EQ(codeOf(decideHead(h, policy)), "origin_not_allowed");
    EXPECT_EQ(decideHead(h, policy).refusal->status, 403);
    policy.corsOrigins = {"https://app.example"};
    EXPECT_EQ(statusOf(decideHead(h, policy)), 403);
    h.origin = "https://app.example";
    const HeadDecision allowed = decideHead(h, policy);
    ASSERT_EQ(statusOf(allowed), 200);
    ASSERT_FALSE(allowed.headers.empty());
    EXPECT_EQ(allowed.headers[0].name, "Access-Control-Allow-Origin");
    EXPECT_EQ(allowed.headers[0].value, "https://app.example");
    // The preflight a browser sends first.
    RequestHead preflight = h;
    preflight.method = "OPTIONS";
    preflight.contentLength.reset();
    preflight.contentType.clear();
    const HeadDecision p = decideHead(preflight, policy);
    EXPECT_EQ(statusOf(p), 200);
    EXPECT_EQ(p.route, Route::Preflight);
    bool allowsAuthorization = false;
    for (const auto& header : p.headers) allowsAuthorization |= header.name == "Access-Control-Allow-Headers" && header.value.find("Authorization") != std::string::npos;
    EXPECT_TRUE(allowsAuthorization);
    // A refusal to an allowed origin keeps the CORS header, so the page can read why.
}

TEST(RequestPolicy, APostMustBeJsonOfBoundedLengthUncompressed) {
    const AccessPolicy policy;
    EXPECT_EQ(statusOf(decideHead(post(), policy)), 200);
    RequestHead csrf = post();
    csrf.contentType = "text/plain";  // what a form or a no-preflight fetch sends
    EXPECT_EQ(statusOf(decideHead(csrf, policy)), 415);
    RequestHead withCharset = post();
    withCharset.contentType = "Application/JSON; charset=utf-8";
    EXPECT_EQ(statusOf(decideHead(withCharset, policy)), 200);
    RequestHead gzip = post();
    gzip.contentEncoding = "gzip";
    EXPECT_EQ(statusOf(decideHead(gzip, policy)), 415);
    RequestHead identity = post();
    identity.contentEncoding = "identity";
    EXPECT_EQ(statusOf(decideHead(identity, policy)), 200);
    RequestHead big = post();
    big.contentLength = policy.maxBodyBytes + 1;
    EXPECT_EQ(statusOf(decideHead(big, policy)), 413);
    RequestHead chunked = post();
    chunked.contentLength.reset();
    chunked.transferEncoding = "chunked";
    EXPECT_EQ(statusOf(decideHead(chunked, policy)), 200);
    chunked.transferEncoding = "gzip, chunked";
    EXPECT_EQ(statusOf(decideHead(chunked, policy)), 501);
    RequestHead unsized = post();
    unsized.contentLength.reset();
    EXPECT_EQ(statusOf(decideHead(unsized, policy)), 411);
    RequestHead twice = post();
    twice.repeatedField = true;
    EXPECT_EQ(statusOf(decideHead(twice, policy)), 400);
}

TEST(RequestPolicy, RoutesMethodsAndKeys) {
    const ApiKeys keys({"first-key-0123456789", "second"});
    AccessPolicy policy;
    policy.keys = &keys;
    EXPECT_EQ(statusOf(decideHead(get("/health"), policy)), 200);  // public
    EXPECT_EQ(statusOf(decideHead(get("/v1/models"), policy)), 401);
    RequestHead wrongKey = get("/v1/models");
    wrongKey.authorization = "Bearer nope";
    EXPECT_EQ(codeOf(decideHead(wrongKey, policy)), "invalid_api_key");
    RequestHead second = get("/v1/models?x=1");
    second.authorization = "bearer second";
    const HeadDecision d = decideHead(second, policy);
    EXPECT_EQ(statusOf(d), 200);
    EXPECT_EQ(d.keyIndex, 1);
    EXPECT_EQ(d.route, Route::Models);
    const HeadDecision unknown = decideHead(get("/v1/nothing/<script>"), policy);
    EXPECT_EQ(statusOf(unknown), 404);
    EXPECT_EQ(unknown.refusal->message.find("script"), std::string::npos);
    RequestHead getChat = get("/v1/chat/completions");
    getChat.authorization = "Bearer second";
    EXPECT_EQ(statusOf(decideHead(getChat, policy)), 405);
    EXPECT_EQ(statusOf(decideHead(get("http://127.0.0.1/v1/models"), policy)), 400);  // absolute form
}

TEST(ApiKeys, SeveralKeysComparedWholeAndMaskedInTheLog) {
    auto parsed = ApiKeys::parseKeyFile("# team keys\n  alpha-key-0000000001  \r\n\nbeta\n");
    ASSERT_TRUE(parsed) << parsed.error().message;
    ASSERT_EQ(parsed->size(), 2u);
    const ApiKeys keys(*parsed);
    EXPECT_EQ(keys.match("Bearer alpha-key-0000000001"), 0);
    EXPECT_EQ(keys.match("BEARER beta"), 1);
    EXPECT_EQ(keys.match("Bearer bet"), -1);    // a prefix is not the key
    EXPECT_EQ(keys.match("Bearer betaa"), -1);  // nor is a longer one
    EXPECT_EQ(keys.match("Basic beta"), -1);
    EXPECT_EQ(keys.match(""), -1);
    EXPECT_EQ(keys.masked(0), "key 1 …0001");
    EXPECT_EQ(keys.masked(1), "key 2");  // short keys: not even their end
    EXPECT_EQ(keys.masked(-1), "-");
    const auto bad = ApiKeys::parseKeyFile("good\nhas space\n");
    ASSERT_FALSE(bad);
    EXPECT_EQ(bad.error().message.find("has space"), std::string::npos);  // names the line only
    EXPECT_NE(bad.error().message.find("line 2"), std::string::npos);
    EXPECT_FALSE(ApiKeys::checkKey(""));
    EXPECT_FALSE(ApiKeys::checkKey("tab\tkey"));
    EXPECT_FALSE(ApiKeys::readKeyFile("/nonexistent/keys"));
}

TEST(JsonShape, DepthAndValueCountAreBoundedBeforeParsing) {
    EXPECT_FALSE(jsonShapeError(R"({"a":[1,2,{"b":"[[[[[[[["}]})"));  // brackets in strings do not count
    EXPECT_FALSE(jsonShapeError(R"({"a":"\"[[[[[["})"));
    const std::string deep64 = std::string(64, '[') + std::string(64, ']');
    EXPECT_FALSE(jsonShapeError(deep64));
    const std::string deep65 = std::string(65, '[') + std::string(65, ']');
    ASSERT_TRUE(jsonShapeError(deep65));
    EXPECT_NE(jsonShapeError(deep65)->find("64"), std::string::npos);
    EXPECT_TRUE(jsonShapeError(std::string(1'000'000, '{')));
    std::string wide = "[";
    for (int i = 0; i < 70000; ++i) wide += "0,";
    wide += "0]";
    EXPECT_TRUE(jsonShapeError(wide));
    EXPECT_FALSE(jsonShapeError(wide, {64, 100000}));
}

TEST(AccessLog, OneEscapedLinePerRequest) {
    AccessRecord r;
    r.remoteAddress = "127.0.0.1";
    r.method = "POST";
    r.target = "/v1/chat/completions?key=secret";
    r.status = 200;
    r.bytesSent = 5321;
    r.duration = std::chrono::milliseconds(812);
    r.key = "key 1 …f3a9";
    const auto when = std::chrono::system_clock::time_point(std::chrono::milliseconds(1796403035123));
    EXPECT_EQ(accessLine(r, when), "2026-12-04T16:50:35.123Z 127.0.0.1 POST /v1/chat/completions 200 5321 B 812 ms key 1 …f3a9");
    r.target = "/a\r\nFAKE 200 line\x01\xff";
    const std::string line = accessLine(r, when);
    EXPECT_EQ(line.find('\n'), std::string::npos);
    EXPECT_EQ(line.find('\r'), std::string::npos);
    EXPECT_NE(line.find("/a\\x0D\\x0AFAKE\\x20200"), std::string::npos) << line;
    EXPECT_EQ(escapedForLog(std::string(1000, 'a')).size(), 200u + std::string("…").size());
}
