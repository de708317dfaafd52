#include "catalog/hub_transfer.h"

#include <curl/curl.h>

#include <algorithm>
#include <fmt/format.h>
#include <mutex>
#include <thread>

#include "catalog/hub_responses.h"

namespace inferscope::catalog::detail {
namespace {

void globalInit() {
    static std::once_flag once;
    std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}


struct ExchangeState {
    const Exchange* exchange = nullptr;
    Response* response = nullptr;
    CURL* curl = nullptr;
    uint64_t headerBytes = 0;
    bool headersTooLong = false;
    bool sinkStopped = false;
    bool limitReached = false;
};

size_t onHeader(char* data, size_t size, size_t count, void* user) {
    auto* st = static_cast<ExchangeState*>(user);
    const size_t n = size * count;
    st->headerBytes += n;
    if (st->headerBytes > kMaxHeaderBytes) {
        st->headersTooLong = true;
        return 0;
    }
    std::string_view line(data, n);
    if (line.starts_with("HTTP/")) {  // a new response (never two here: redirects are not followed)
        st->response->headers.clear();
        return n;
    }
    const size_t colon = line.find(':');
    if (colon == std::string_view::npos) return n;
    std::string name(line.substr(0, colon));
    std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return char(std::tolower(c)); });
    static const char* kept[] = {"location", "etag", "x-linked-etag", "x-linked-size", "content-range", "retry-after", "link",
                                 "x-error-code", "content-length"};
    if (std::find_if(std::begin(kept), std::end(kept), [&](const char* k) { return name == k; }) == std::end(kept)) return n;
    std::string_view value = line.substr(colon + 1);
    while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) value.remove_prefix(1);
    while (!value.empty() && (value.back() == '\r' || value.back() == '\n' || value.back() == ' ')) value.remove_suffix(1);
    st->response->headers[name] = std::string(value.substr(0, 8192));
    return n;
}

size_t onBody(char* data, size_t size, size_t count, void* user) {
    auto* st = static_cast<ExchangeState*>(user);
    const size_t n = size * count;
    long status = 0;
    curl_easy_getinfo(st->curl, CURLINFO_RESPONSE_CODE, &status);
    if (status < 200 || status >= 300) return n;  // an error's or a redirect's body: read and dropped
    const Exchange& ex = *st->exchange;
    if (ex.sink) {
        if (!ex.sink(status, data, n)) {
            st->sinkStopped = true;
            return 0;
        }
        return n;
    }
    std::string& body = st->response->body;
    const uint64_t room = ex.maxBody > body.size() ? ex.maxBody - body.size() : 0;
    body.append(data, size_t(std::min<uint64_t>(room, n)));
    if (n > room) {
        st->response->bodyCut = true;
        st->limitReached = true;
        return 0;  // stop the transfer: past the bound
    }
    if (ex.stopAtMaxBody && body.size() >= ex.maxBody) {
        st->limitReached = true;
        return 0;
    }
    return n;
}

int onProgress(void* user, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
    auto* st = static_cast<ExchangeState*>(user);
    return st->exchange->keepGoing && !st->exchange->keepGoing() ? 1 : 0;
}

// Why a transfer ended without a response, in one line (never with a header's or body's content).
struct TransportError {
    CURLcode code = CURLE_OK;
    bool cancelled = false;
    bool stalled = false;
    std::string message;
};

Result<Response> performOnce(const HubOptions& o, const Exchange& ex, TransportError& terr) {
    globalInit();
    std::unique_ptr<CURL, decltype(&curl_easy_cleanup)> curl(curl_easy_init(), &curl_easy_cleanup);
    if (!curl) return fail(ErrorKind::Io, "cannot start an HTTP transfer (libcurl)");
    Response response;
    ExchangeState st{&ex, &response, curl.get()};
    curl_slist* headers = nullptr;
    for (const auto& h : ex.headers) headers = curl_slist_append(headers, h.c_str());
    std::string auth;
    if (ex.sendToken && o.token) {
        auth = "Authorization: Bearer " + *o.token;
        headers = curl_slist_append(headers, auth.c_str());
    }
    std::unique_ptr<curl_slist, decltype(&curl_slist_free_all)> headerList(headers, &curl_slist_free_all);
    CURL* c = curl.get();
    curl_easy_setopt(c, CURLOPT_URL, ex.url.c_str());
    curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L);  // redirects are followed by hand, as the hub's rules say
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, long(std::max(1, o.connectTimeoutSeconds)));
    curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, 1L);  // less than a byte a second ...
    curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, long(std::max(1, o.stallTimeoutSeconds)));  // ... for this long: stalled
    curl_easy_setopt(c, CURLOPT_USERAGENT, o.userAgent.c_str());
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, headerList.get());
    curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, onHeader);
    curl_easy_setopt(c, CURLOPT_HEADERDATA, &st);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, onBody);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &st);
    curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, onProgress);
    curl_easy_setopt(c, CURLOPT_XFERINFODATA, &st);
    curl_easy_setopt(c, CURLOPT_ACCEPT_ENCODING, "identity");
    const CURLcode rc = curl_easy_perform(c);
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &response.status);
    if (rc == CURLE_OK || (rc == CURLE_WRITE_ERROR && st.limitReached)) return response;
    terr.code = rc;
    if (st.headersTooLong) return fail(ErrorKind::Io, "the hub's response headers are longer than 64 KiB");
    if (rc == CURLE_ABORTED_BY_CALLBACK) {
        terr.cancelled = true;
        return fail(ErrorKind::Cancelled, "cancelled");
    }
    if (rc == CURLE_WRITE_ERROR && st.sinkStopped) return fail(ErrorKind::Io, "the transfer was stopped: the file could not be written");
    if (rc == CURLE_OPERATION_TIMEDOUT) {
        terr.stalled = response.status != 0 || rc == CURLE_OPERATION_TIMEDOUT;
        terr.message = fmt::format("the connection stalled (no data for {} s)", o.stallTimeoutSeconds);
    } else {
        terr.message = fmt::format("the connection failed: {}", curl_easy_strerror(rc));
    }
    return std::unexpected(Error{ErrorKind::Io, terr.message});
}


}  // namespace

Error hubError(const Response& r, std::string_view what, const HubOptions& o) {
    auto code = r.headers.find("x-error-code");
    const std::string errorCode = code == r.headers.end() ? "" : code->second;
    const bool haveToken = o.token.has_value();
    std::string m;
    ErrorKind kind = ErrorKind::Io;
    if (r.status == 401 || r.status == 403) kind = ErrorKind::Denied;
    if (r.status == 401 && errorCode == "RepoNotFound")
        m = fmt::format("{} was not found on the hub, or it is private{} (HTTP 401)", what, haveToken ? "" : fmt::format(" ({})", o.tokenAdvice));
    else if (r.status == 401)
        m = haveToken ? fmt::format("the hub refused {} for {} (HTTP 401): check that the token is valid", o.tokenName, what)
                      : fmt::format("{} needs a Hugging Face token (HTTP 401): {}", what, o.tokenAdvice);
    else if (r.status == 403)
        m = fmt::format("{} is gated (HTTP 403): accept its conditions on its page on the hub, then {} to a token of "
                        "that account{}", what, o.tokenAdvice, haveToken ? " (the one set was refused)" : "");
    else if (r.status == 404)
        m = fmt::format("{} was not found on the hub (HTTP 404)", what);
    else if (r.status == 429)
        m = fmt::format("the hub is limiting requests (HTTP 429) for {}: try again later", what);
    else if (r.status >= 500)
        m = fmt::format("the hub failed (HTTP {}) for {}: try again later", r.status, what);
    else
        m = fmt::format("the hub answered HTTP {} for {}", r.status, what);
    return Error{kind, std::move(m)};
}

void wait(const HubOptions& o, int seconds) {
    if (o.sleep) o.sleep(seconds);
    else std::this_thread::sleep_for(std::chrono::seconds(seconds));
}

Result<Response> hubGet(const HubOptions& o, std::string url, Exchange ex, std::string_view what, bool retry) {
    const std::string hubOrigin = originOf(o.endpoint);
    int tries = 0;
    for (int hop = 0;;) {
        ex.url = url;
        ex.sendToken = originOf(url) == hubOrigin;
        TransportError terr;
        auto r = performOnce(o, ex, terr);
        if (!r) {
            if (terr.cancelled || !retry || ++tries > o.retries || terr.code == CURLE_OK) return std::unexpected(r.error());
            wait(o, std::min(1 << std::min(tries - 1, 5), 30));
            continue;
        }
        if (r->status >= 300 && r->status < 400) {
            auto loc = r->headers.find("location");
            std::optional<std::string> next = loc == r->headers.end() ? std::nullopt : resolveRedirect(url, loc->second);
            if (!next) return fail(ErrorKind::Io, fmt::format("the hub redirected {} nowhere usable (HTTP {})", what, r->status));
            if (originOf(url).starts_with("https:") && originOf(*next).starts_with("http:"))
                return fail(ErrorKind::Io, fmt::format("the hub redirected {} from https to plain http: refused", what));
            if (++hop > 5) return fail(ErrorKind::Io, fmt::format("too many redirects for {}", what));
            url = *next;
            continue;
        }
        if ((r->status == 429 || r->status >= 500) && retry && ++tries <= o.retries) {
            int seconds = std::min(1 << std::min(tries - 1, 5), 30);
            if (auto ra = r->headers.find("retry-after"); ra != r->headers.end())
                seconds = std::clamp(retryAfterSeconds(ra->second, seconds), 0, o.maxRetryAfterSeconds);
            wait(o, seconds);
            url = ex.url;
            continue;
        }
        // Without retries the caller decides (the download's own loop resumes after 429 and 5xx).
        if ((r->status < 200 || r->status >= 300) && retry) return std::unexpected(hubError(*r, what, o));
        return r;
    }
}

std::string escapePath(std::string_view path) {
    std::string out;
    globalInit();
    size_t start = 0;
    while (start <= path.size()) {
        const size_t end = std::min(path.find('/', start), path.size());
        char* e = curl_easy_escape(nullptr, path.data() + start, int(end - start));
        if (!out.empty() || start > 0) out += '/';
        out += e ? e : "";
        curl_free(e);
        start = end + 1;
    }
    return out;
}

std::string resolveUrl(const HubOptions& o, std::string_view repo, std::string_view revision, std::string_view file) {
    return fmt::format("{}/{}/resolve/{}/{}", o.endpoint, repo, escapePath(revision), escapePath(file));
}

Result<void> checkNames(std::string_view repo, std::string_view file, std::string_view revision) {
    if (!validRepoId(repo)) return fail(ErrorKind::InvalidArgument, "a repository is named ORG/NAME (letters, digits, '-', '_', '.')");
    if (!file.empty() && !validRepoPath(file))
        return fail(ErrorKind::InvalidArgument, "a file is named by its path in the repository (no '..', no leading '/')");
    if (!validRepoPath(revision)) return fail(ErrorKind::InvalidArgument, "the revision is a branch, tag or commit name");
    return {};
}

// ---- SHA-256 --------------------------------------------------------------------------------------------

std::string escapeQuery(std::string_view text) {
    globalInit();
    char* q = curl_easy_escape(nullptr, text.data(), int(std::min<size_t>(text.size(), 200)));
    std::string out = q ? q : "";
    curl_free(q);
    return out;
}

}  // namespace inferscope::catalog::detail
