#include "server/request_policy.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>

namespace inferscope::server {
namespace {

char lower(char c) { return (c >= 'A' && c <= 'Z') ? char(c + 32) : c; }

std::string lowered(std::string_view s) {
    std::string out(s);
    for (char& c : out) c = lower(c);
    return out;
}

std::string_view trimmed(std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
    return s;
}

bool isDigits(std::string_view s) {
    return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// A dotted-quad IPv4 address in 127.0.0.0/8.
bool isLoopbackIpv4(std::string_view s) {
    int parts = 0;
    while (parts < 4) {
        const size_t dot = s.find('.');
        const std::string_view part = s.substr(0, dot);
        unsigned value = 0;
        if (!isDigits(part) || part.size() > 3) return false;
        std::from_chars(part.data(), part.data() + part.size(), value);
        if (value > 255 || (parts == 0 && value != 127)) return false;
        ++parts;
        if (dot == std::string_view::npos) return parts == 4;
        s.remove_prefix(dot + 1);
    }
    return false;  // a fifth part
}

ApiError refused(int status, std::string message, std::string code) {
    return ApiError{status, std::move(message), status >= 500 ? "server_error" : "invalid_request_error", {}, std::move(code)};
}

std::optional<Route> routeOf(std::string_view path) {
    if (path == "/health") return Route::Health;
    if (path == "/v1/models") return Route::Models;
    if (path == "/v1/chat/completions") return Route::ChatCompletions;
    if (path == "/v1/completions") return Route::Completions;
    if (path == "/metrics") return Route::Metrics;
    if (path == "/slots") return Route::Slots;
    return std::nullopt;
}

bool originAllowed(std::string_view origin, const AccessPolicy& policy) {
    return std::any_of(policy.corsOrigins.begin(), policy.corsOrigins.end(),
                       [&](const std::string& o) { return o == "*" || o == origin; });
}

void addCorsHeaders(const http::RequestHead& head, const AccessPolicy& policy, HeadDecision& d) {
    if (head.origin.empty()) return;
    // The configured value, never the request's bytes (they are equal, or the list allows any).
    const bool any = std::find(policy.corsOrigins.begin(), policy.corsOrigins.end(), "*") != policy.corsOrigins.end();
    d.headers.push_back({"Access-Control-Allow-Origin", any ? std::string("*") : *std::find(policy.corsOrigins.begin(), policy.corsOrigins.end(), head.origin)});
    if (!any) d.headers.push_back({"Vary", "Origin"});
}

}  // namespace

std::string hostName(std::string_view host) {
    host = trimmed(host);
    if (host.empty()) return {};
    std::string_view name;
    std::string_view rest;
    if (host.front() == '[') {  // IP-literal
        const size_t close = host.find(']');
        if (close == std::string_view::npos) return {};
        name = host.substr(0, close + 1);
        rest = host.substr(close + 1);
    } else {
        const size_t colon = host.find(':');
        name = host.substr(0, colon);
        rest = colon == std::string_view::npos ? std::string_view() : host.substr(colon);
    }
    if (!rest.empty() && (rest.front() != ':' || (rest.size() > 1 && !isDigits(rest.substr(1))) || rest.size() > 6)) return {};
    if (name.empty()) return {};
    for (char c : name)
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '-' || c == '_' ||
              c == '[' || c == ']' || c == ':'))
            return {};
    return lowered(name);
}

bool isLoopbackHost(std::string_view host) {
    const std::string name = hostName(host);
    return name == "localhost" || name == "localhost." || name == "[::1]" || isLoopbackIpv4(name);
}

bool isLoopbackAddress(std::string_view address) {
    const std::string a = lowered(trimmed(address));
    return a == "localhost" || a == "::1" || a == "[::1]" || isLoopbackIpv4(a);
}

HeadDecision decideHead(const http::RequestHead& head, const AccessPolicy& policy) {
    HeadDecision d;
    auto refuse = [&d](int status, std::string message, std::string code) {
        d.refusal = refused(status, std::move(message), std::move(code));
        return d;
    };
    if (head.repeatedField) return refuse(400, "a header that may appear once (Host, Origin, Authorization, Content-Type, Content-Encoding) appears twice", "invalid_request");
    if (head.target.empty() || head.target.front() != '/') return refuse(400, "the request target must be a path (origin-form, starting with /)", "invalid_request");

    // DNS rebinding: a page whose name resolves to 127.0.0.1 sends its own name as Host.
    if (head.host.empty()) {
        if (head.version >= 11 || policy.loopbackBind) return refuse(400, "the request has no Host header", "invalid_request");
    } else if (hostName(head.host).empty()) {
        return refuse(400, "the Host header is not a host name", "invalid_request");
    } else if (policy.loopbackBind || !policy.allowedHosts.empty()) {
        const std::string name = hostName(head.host);
        const bool listed = std::find(policy.allowedHosts.begin(), policy.allowedHosts.end(), name) != policy.allowedHosts.end();
        if (!listed && !(policy.loopbackBind && isLoopbackHost(head.host)))
            return refuse(403, policy.loopbackBind ? "this server listens on a loopback address and answers only requests for localhost, 127.0.0.1 or [::1] (--allowed-hosts adds names)"
                                                    : "the Host header names none of the hosts --allowed-hosts lists",
                          "host_not_allowed");
    }
    // CSRF: browsers send Origin with every cross-origin POST (and fetch); other clients send none.
    if (!head.origin.empty() && !originAllowed(head.origin, policy))
        return refuse(403, "cross-origin requests are refused; start the server with --cors-origins ORIGIN to allow a web page's origin", "origin_not_allowed");
    addCorsHeaders(head, policy, d);

    const std::string_view path = std::string_view(head.target).substr(0, head.target.find('?'));
    if (head.method == "OPTIONS") {  // a CORS preflight (or a client asking what is allowed)
        d.route = Route::Preflight;
        d.headers.push_back({"Allow", "GET, POST, OPTIONS"});
        if (!head.origin.empty()) {
            d.headers.push_back({"Access-Control-Allow-Methods", "GET, POST, OPTIONS"});
            d.headers.push_back({"Access-Control-Allow-Headers", "Authorization, Content-Type"});
            d.headers.push_back({"Access-Control-Max-Age", "600"});
        }
        return d;
    }
    const auto route = routeOf(path);
    if (!route) return refuse(404, "no such route: this server has GET /health, GET /v1/models, GET /slots, GET /metrics, POST /v1/chat/completions and POST /v1/completions", "unknown_url");
    d.route = *route;
    const bool isPost = *route == Route::ChatCompletions || *route == Route::Completions;
    const bool methodOk = isPost ? head.method == "POST" : (head.method == "GET" || head.method == "HEAD");
    if (!methodOk) {
        d.headers.push_back({"Allow", isPost ? "POST, OPTIONS" : "GET, HEAD, OPTIONS"});
        return refuse(405, isPost ? "this route takes POST" : "this route takes GET", "method_not_allowed");
    }
    if (*route != Route::Health && policy.keys && !policy.keys->empty()) {
        d.keyIndex = policy.keys->match(head.authorization);
        if (d.keyIndex < 0) {
            d.headers.push_back({"WWW-Authenticate", "Bearer"});
            return refuse(401, head.authorization.empty() ? "this server needs an API key: send Authorization: Bearer <key>" : "the API key is not this server's",
                          "invalid_api_key");
        }
    }
    if (!isPost) {
        if (head.contentLength.value_or(0) > 0 || !head.transferEncoding.empty()) return refuse(400, "a GET request has no body", "invalid_request");
        return d;
    }
    if (!head.contentLength && head.transferEncoding.empty())  // HTTP/1.1: such a request has no body
        return refuse(411, "a POST needs its body's length: send Content-Length (or Transfer-Encoding: chunked)", "length_required");
    if (!head.transferEncoding.empty() && lowered(trimmed(head.transferEncoding)) != "chunked")
        return refuse(501, "the only Transfer-Encoding accepted is chunked", "unsupported_transfer_encoding");
    if (!head.contentEncoding.empty() && lowered(trimmed(head.contentEncoding)) != "identity")
        return refuse(415, "compressed request bodies are not accepted: send the JSON without Content-Encoding", "unsupported_media_type");
    const std::string type = lowered(trimmed(std::string_view(head.contentType).substr(0, head.contentType.find(';'))));
    if (type != "application/json")
        return refuse(415, "the body must be sent as Content-Type: application/json", "unsupported_media_type");
    if (head.contentLength && *head.contentLength > policy.maxBodyBytes)
        return refuse(413, fmt::format("the request body is over this server's limit of {} bytes", policy.maxBodyBytes), "request_too_large");
    return d;
}

}  // namespace inferscope::server
