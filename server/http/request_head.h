#pragma once
// A request's head as the server's rules see it: plain strings, no HTTP library types. The
// transport fills it from what it parsed (bounded by its header limit); request_policy.h decides.

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace inferscope::server::http {

struct RequestHead {
    std::string method;            // "GET", "POST", ... as sent
    std::string target;            // the request-target as sent ("/v1/models?x=1")
    int version = 11;              // 10 or 11
    std::string host, origin, authorization, contentType, contentEncoding, transferEncoding, expect;
    std::optional<uint64_t> contentLength;
    bool keepAlive = true;
    bool repeatedField = false;    // Host, Origin, Authorization, Content-Type or Content-Encoding sent twice
    std::string remoteAddress;     // the peer's IP address, as text
};

struct Header {
    std::string name, value;
};

// A whole response. The transport adds Content-Length, Date and Connection.
struct Reply {
    int status = 200;
    std::string contentType = "application/json";
    std::vector<Header> headers;
    std::string body;
};

}  // namespace inferscope::server::http
