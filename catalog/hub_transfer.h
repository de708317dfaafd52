#pragma once
// Inside the hub client (hub_client.cpp, hub_download.cpp): one HTTP exchange with the hub through
// libcurl, redirects followed by the hub's rules, retries, the one-line error of a status, and the
// SHA-256 a download is checked with. Not part of catalog's interface.

#include <openssl/evp.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <fmt/format.h>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "catalog/hub_client.h"

namespace inferscope::catalog::detail {

using Clock = std::chrono::steady_clock;

struct Response {
    long status = 0;
    std::map<std::string, std::string> headers;  // lowercase names; only those below are kept
    std::string body;                            // collected bodies only (bounded)
    bool bodyCut = false;                        // collection stopped at its bound
};

struct Exchange {
    std::string url;
    std::vector<std::string> headers;            // "Name: value" besides Authorization
    bool sendToken = false;
    uint64_t maxBody = 0;                        // collect up to this many bytes of a 2xx body
    bool stopAtMaxBody = false;                  // reaching maxBody ends the transfer successfully
    // Streaming instead of collecting: called with each piece of a 2xx body; false aborts.
    std::function<bool(long status, const char* data, size_t size)> sink;
    std::function<bool()> keepGoing;             // polled during the transfer; false aborts (cancel)
};

// GET `url` on the hub: redirects followed as the hub's client does (a Location on the hub's origin
// keeps the token, another origin (its CDN) gets none; https never to http), at most 5. Retried on
// 429 (after Retry-After), 5xx and failed connections when `retry`, with `o.retries` tries each;
// without `retry` one try, and an error status comes back as the response.
Result<Response> hubGet(const HubOptions& o, std::string url, Exchange ex, std::string_view what, bool retry = true);

// One line for an HTTP status that is not success (never with the body or a header's text):
// Denied for 401 and 403, Io for the others.
Error hubError(const Response& r, std::string_view what, const HubOptions& o);

// How a retry waits (o.sleep when the caller gave one).
void wait(const HubOptions& o, int seconds);

// URL escaping: each segment of a repository path; a query's text.
std::string escapePath(std::string_view path);
std::string escapeQuery(std::string_view text);
std::string resolveUrl(const HubOptions& o, std::string_view repo, std::string_view revision, std::string_view file);
Result<void> checkNames(std::string_view repo, std::string_view file, std::string_view revision);

inline bool cancelled(const std::atomic<bool>* cancel) { return cancel && cancel->load(std::memory_order_relaxed); }

class Sha256 {
public:
    Sha256() : ctx_(EVP_MD_CTX_new(), &EVP_MD_CTX_free) { reset(); }
    void reset() { EVP_DigestInit_ex(ctx_.get(), EVP_sha256(), nullptr); }
    void update(const void* data, size_t n) { EVP_DigestUpdate(ctx_.get(), data, n); }
    std::string hex() {
        unsigned char digest[EVP_MAX_MD_SIZE];
        unsigned int len = 0;
        EVP_DigestFinal_ex(ctx_.get(), digest, &len);
        std::string out;
        for (unsigned int i = 0; i < len; ++i) out += fmt::format("{:02x}", digest[i]);
        return out;
    }

private:
    std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx_;
};

}  // namespace inferscope::catalog::detail
