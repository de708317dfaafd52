#pragma once
// Who may ask what, decided from a request's head alone, before its body is read: the form of
// the target, the Host (a server bound to a loopback address answers only requests that name this
// machine: DNS rebinding), the Origin (cross-origin browser requests only from the origins
// --cors-origins lists: CSRF), the route and method, the API key, and for a POST the body's
// framing (a length or chunked, no Transfer-Encoding but chunked, no Content-Encoding,
// Content-Type application/json, Content-Length within the limit). Pure: unit-tested and fuzzed without sockets. No message
// repeats what the request sent.

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "server/api_keys.h"
#include "server/http/request_head.h"
#include "server/openai_request.h"

namespace inferscope::server {

enum class Route { Health, Models, ChatCompletions, Completions, Preflight, Metrics, Slots };

struct AccessPolicy {
    bool loopbackBind = true;               // bound to 127.0.0.0/8, ::1 or localhost
    std::vector<std::string> allowedHosts;  // more Host names accepted (lower case, no port)
    std::vector<std::string> corsOrigins;   // origins allowed cross-origin, exactly as browsers send them; "*": any
    const ApiKeys* keys = nullptr;          // none or empty: no key needed
    size_t maxBodyBytes = 4u << 20;
};

struct HeadDecision {
    std::optional<ApiError> refusal;        // set: answer this and read no body
    Route route = Route::Health;
    int keyIndex = -1;                      // the key that matched (ApiKeys::masked)
    std::vector<http::Header> headers;      // to add to the answer (CORS, Allow, WWW-Authenticate)
};

HeadDecision decideHead(const http::RequestHead& head, const AccessPolicy& policy);

// Whether a Host header's value names this machine's loopback interface: localhost, 127.x.y.z or
// [::1], with or without a port. Exposed for the tests.
bool isLoopbackHost(std::string_view host);
// The host part of a Host header's value, lower case, without the port; empty when malformed.
std::string hostName(std::string_view host);
// Whether an address to bind names a loopback interface.
bool isLoopbackAddress(std::string_view address);

}  // namespace inferscope::server
