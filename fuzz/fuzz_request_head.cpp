// libFuzzer target: the bytes a client sends before a body, as `inferscope-cli serve` reads them:
// Boost.Beast's parser with the transport's header limit (16 KiB), the head turned into the
// policy's view (server/http/head_reader.h) and judged by the policy (server/request_policy.h)
// under a loopback bind with keys and one CORS origin, and under an open bind. Besides the
// sanitizers it checks what the server relies on: a refusal is one of the statuses the policy
// names, says nothing of the request (only printable ASCII of its own), adds no header that could
// split the response, and what is accepted is what the rules allow.

#include <cstdint>

#include <string_view>

#include "server/http/head_reader.h"
#include "server/request_policy.h"
#include "require.h"

namespace {

using namespace inferscope::server;

bool printable(std::string_view s) {
    for (char c : s)
        if (c < ' ' || c > '~') return false;
    return true;
}

void judge(const http::RequestHead& head, const AccessPolicy& policy) {
    const HeadDecision d = decideHead(head, policy);
    for (const http::Header& h : d.headers)
        FUZZ_REQUIRE(h.name.find_first_of("\r\n") == std::string::npos && h.value.find_first_of("\r\n") == std::string::npos, "no header splits the answer");
    if (d.refusal) {
        const int s = d.refusal->status;
        FUZZ_REQUIRE(s == 400 || s == 401 || s == 403 || s == 404 || s == 405 || s == 411 || s == 413 || s == 415 || s == 501, "a refusal's status is the policy's");
        FUZZ_REQUIRE(printable(d.refusal->message) && !d.refusal->message.empty(), "a refusal says nothing of the request");
        return;
    }
    if (policy.loopbackBind) FUZZ_REQUIRE(isLoopbackHost(head.host), "a loopback server answers only its own names");
    if (!head.origin.empty()) FUZZ_REQUIRE(head.origin == "https://app.example", "only the listed origin is let through");
    if (d.route == Route::ChatCompletions || d.route == Route::Completions) {
        FUZZ_REQUIRE(head.method == "POST", "completions by POST");
        FUZZ_REQUIRE(head.contentLength ? *head.contentLength <= policy.maxBodyBytes : !head.transferEncoding.empty(), "a body within the limit, or chunked");
        std::string encoding;
        for (char c : head.contentEncoding)
            if (c != ' ' && c != '\t') encoding += char(c >= 'A' && c <= 'Z' ? c + 32 : c);
        FUZZ_REQUIRE(encoding.empty() || encoding == "identity", "no compressed body");
    }
    if (d.route != Route::Health && d.route != Route::Preflight && policy.keys && !policy.keys->empty())
        FUZZ_REQUIRE(d.keyIndex >= 0, "every route but /health needs a key");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    static const ApiKeys keys({"fuzz-key-0123456789abcdef", "k2"});
    static const AccessPolicy loopback = [] {
        AccessPolicy p;
        p.keys = &keys;
        p.corsOrigins = {"https://app.example"};
        return p;
    }();
    static const AccessPolicy open = [] {
        AccessPolicy p;
        p.loopbackBind = false;
        p.corsOrigins = {"https://app.example"};
        return p;
    }();
    const auto head = http::readHead(std::string_view(reinterpret_cast<const char*>(data), size), 16 * 1024);
    if (!head) return 0;
    judge(*head, loopback);
    judge(*head, open);
    return 0;
}
