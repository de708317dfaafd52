#include "catalog/hub_client.h"

#include <curl/curl.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fmt/format.h>
#include <map>
#include <memory>
#include <mutex>
#include <thread>

#include "catalog/source_files.h"

namespace inferscope::catalog {
namespace fs = std::filesystem;
namespace {

using Clock = std::chrono::steady_clock;

void globalInit() {
    static std::once_flag once;
    std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

// ---- one HTTP exchange ------------------------------------------------------------------------------

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

// One line for an HTTP status that is not success (never with the body or a header's text).
Error hubError(const Response& r, std::string_view what, bool haveToken) {
    auto code = r.headers.find("x-error-code");
    const std::string errorCode = code == r.headers.end() ? "" : code->second;
    std::string m;
    if (r.status == 401 && errorCode == "RepoNotFound")
        m = fmt::format("{} was not found on the hub, or it is private{} (HTTP 401)", what, haveToken ? "" : " (set HF_TOKEN)");
    else if (r.status == 401)
        m = haveToken ? fmt::format("the hub refused HF_TOKEN for {} (HTTP 401): check that the token is valid", what)
                      : fmt::format("{} needs a Hugging Face token (HTTP 401): set HF_TOKEN", what);
    else if (r.status == 403)
        m = fmt::format("{} is gated (HTTP 403): accept its conditions on its page on the hub, then set HF_TOKEN to a token of "
                        "that account{}", what, haveToken ? " (the one set was refused)" : "");
    else if (r.status == 404)
        m = fmt::format("{} was not found on the hub (HTTP 404)", what);
    else if (r.status == 429)
        m = fmt::format("the hub is limiting requests (HTTP 429) for {}: try again later", what);
    else if (r.status >= 500)
        m = fmt::format("the hub failed (HTTP {}) for {}: try again later", r.status, what);
    else
        m = fmt::format("the hub answered HTTP {} for {}", r.status, what);
    return Error{ErrorKind::Io, std::move(m)};
}

void wait(const HubOptions& o, int seconds) {
    if (o.sleep) o.sleep(seconds);
    else std::this_thread::sleep_for(std::chrono::seconds(seconds));
}

// GET `url` on the hub: redirects followed as the hub's client does (a Location on the hub's origin
// keeps the token, another origin (its CDN) gets none; https never to http), at most 5. Retried on
// 429 (after Retry-After), 5xx and failed connections when `retry`, with `o.retries` tries each;
// without `retry` one try, and an error status comes back as the response.
Result<Response> hubGet(const HubOptions& o, std::string url, Exchange ex, std::string_view what, bool retry = true) {
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
        if ((r->status < 200 || r->status >= 300) && retry) return std::unexpected(hubError(*r, what, o.token.has_value()));
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

bool cancelled(const std::atomic<bool>* cancel) { return cancel && cancel->load(std::memory_order_relaxed); }

}  // namespace

Result<HubOptions> HubOptions::fromEnvironment() {
    HubOptions o;
    if (const char* e = std::getenv("HF_ENDPOINT"); e && *e) {
        std::string endpoint(e);
        while (!endpoint.empty() && endpoint.back() == '/') endpoint.pop_back();
        if (originOf(endpoint).empty() || endpoint.find_first_of("?#") != std::string::npos)
            return fail(ErrorKind::InvalidArgument, "HF_ENDPOINT must be an http(s)://host[:port][/path] URL");
        o.endpoint = endpoint;
    }
    if (const char* t = std::getenv("HF_TOKEN"); t && *t) {
        const std::string token(t);
        if (std::any_of(token.begin(), token.end(), [](unsigned char c) { return c <= 0x20 || c == 0x7f; }))
            return fail(ErrorKind::InvalidArgument, "HF_TOKEN holds spaces or control characters");
        o.token = token;
    }
    return o;
}

Result<std::vector<HubRepo>> searchGgufRepos(const HubOptions& o, std::string_view text, int limit) {
    globalInit();
    char* q = curl_easy_escape(nullptr, text.data(), int(std::min<size_t>(text.size(), 200)));
    const std::string url = fmt::format("{}/api/models?search={}&filter=gguf&sort=downloads&direction=-1&limit={}", o.endpoint,
                                        q ? q : "", std::clamp(limit, 1, 100));
    curl_free(q);
    Exchange ex;
    ex.maxBody = kMaxListingBytes;
    auto r = hubGet(o, url, ex, "the search");
    if (!r) return std::unexpected(r.error());
    if (r->bodyCut) return fail(ErrorKind::Io, "the hub's search answer is larger than 8 MiB: refused");
    auto repos = parseSearchResponse(r->body);
    if (!repos) return fail(ErrorKind::Io, "the hub's search answer is not a list of repositories");
    return *repos;
}

Result<std::vector<HubFile>> listGgufFiles(const HubOptions& o, std::string_view repo, std::string_view revision) {
    if (auto ok = checkNames(repo, "", revision); !ok) return std::unexpected(ok.error());
    std::string url = fmt::format("{}/api/models/{}/tree/{}?recursive=true", o.endpoint, repo, escapePath(revision));
    std::vector<HubFile> files;
    const std::string what(repo);
    for (int page = 0; page < 20; ++page) {
        Exchange ex;
        ex.maxBody = kMaxListingBytes;
        auto r = hubGet(o, url, ex, what);
        if (!r) return std::unexpected(r.error());
        if (r->bodyCut) return fail(ErrorKind::Io, fmt::format("the hub's file list of {} is larger than 8 MiB: refused", what));
        auto listed = parseTreeResponse(r->body);
        if (!listed) return fail(ErrorKind::Io, fmt::format("the hub's file list of {} is not a list of files", what));
        for (auto& f : *listed) {
            const bool gguf = f.path.size() > 5 && std::equal(f.path.end() - 5, f.path.end(), ".gguf", [](char a, char b) {
                                  return std::tolower(static_cast<unsigned char>(a)) == b;
                              });
            if (gguf) files.push_back(std::move(f));
        }
        auto link = r->headers.find("link");
        std::optional<std::string> next = link == r->headers.end() ? std::nullopt : nextPageLink(link->second);
        if (!next || originOf(*next) != originOf(o.endpoint)) break;  // pages stay on the hub
        url = *next;
    }
    return files;
}

Result<ModelSummary> readRemoteHeader(const HubOptions& o, std::string_view repo, const HubFile& file, std::string_view revision,
                                      uint64_t* bytesRead, const std::atomic<bool>* cancel) {
    if (auto ok = checkNames(repo, file.path, revision); !ok) return std::unexpected(ok.error());
    if (file.size == 0) return fail(ErrorKind::BadFile, fmt::format("{} is empty on the hub", file.path));
    const std::string url = resolveUrl(o, repo, revision, file.path);
    const std::string what = fmt::format("{}/{}", repo, file.path);
    std::vector<uint8_t> prefix;
    uint64_t want = std::min<uint64_t>(file.size, uint64_t(4) << 20);
    if (bytesRead) *bytesRead = 0;
    for (;;) {
        Exchange ex;
        ex.headers.push_back(fmt::format("Range: bytes={}-{}", prefix.size(), want - 1));
        ex.maxBody = want - prefix.size();
        ex.stopAtMaxBody = true;  // a server that ignores Range sends the whole file: stop at what was asked
        ex.keepGoing = [cancel] { return !cancelled(cancel); };
        auto r = hubGet(o, url, ex, what);
        if (!r) return std::unexpected(r.error());
        if (r->status == 206) {
            auto cr = r->headers.find("content-range");
            auto start = cr == r->headers.end() ? std::nullopt : contentRangeStart(cr->second);
            if (!start || *start != prefix.size())
                return fail(ErrorKind::Io, fmt::format("the hub sent another part of {} than the one asked", what));
        } else if (!prefix.empty()) {
            return fail(ErrorKind::Io, fmt::format("the hub ignored the byte range asked of {}", what));
        }
        if (bytesRead) *bytesRead += r->body.size();
        prefix.insert(prefix.end(), r->body.begin(), r->body.end());
        if (r->body.empty()) return fail(ErrorKind::Io, fmt::format("the hub sent no bytes of {}", what));
        bool needsMore = false;
        auto parsed = GgufFile::parseHeader(prefix, file.size, &needsMore);
        if (parsed) {
            auto summary = summarizeModel(*parsed);
            if (!summary) return std::unexpected(summary.error());
            return summary;
        }
        if (!needsMore || prefix.size() >= file.size || prefix.size() >= kMaxRemoteHeaderBytes) {
            Error e = parsed.error();
            if (needsMore) e.message = fmt::format("the header of {} is longer than {} MiB", what, kMaxRemoteHeaderBytes >> 20);
            else e.message = fmt::format("{}: {}", what, e.message);
            return std::unexpected(e);
        }
        want = std::min({file.size, kMaxRemoteHeaderBytes, uint64_t(prefix.size()) * 4});
    }
}

fs::path downloadDestination(const fs::path& modelsFolder, std::string_view repo, std::string_view file) {
    return modelsFolder / fs::path(std::string(repo)) / fs::path(std::string(file));
}

fs::path partialFileOf(const fs::path& destination) { return destination.string() + ".part"; }

Result<fs::path> downloadModel(const HubOptions& o, const DownloadRequest& req) {
    if (auto ok = checkNames(req.repo, req.file, req.revision); !ok) return std::unexpected(ok.error());
    const std::string what = fmt::format("{}/{}", req.repo, req.file);
    auto files = listGgufFiles(o, req.repo, req.revision);
    if (!files) return std::unexpected(files.error());
    auto found = std::find_if(files->begin(), files->end(), [&](const HubFile& f) { return f.path == req.file; });
    if (found == files->end()) return fail(ErrorKind::InvalidArgument, fmt::format("{} has no GGUF file {}", req.repo, req.file));
    const HubFile expected = *found;
    if (expected.sha256.empty())
        return fail(ErrorKind::BadFile, fmt::format("the hub gives no sha256 for {}: it cannot be verified, so it is not downloaded", what));

    const fs::path dest = downloadDestination(req.modelsFolder, req.repo, req.file);
    const fs::path part = partialFileOf(dest);
    const fs::path meta = part.string() + ".json";
    std::error_code ec;
    fs::create_directories(dest.parent_path(), ec);
    if (ec) return fail(ErrorKind::Io, fmt::format("cannot create {}: {}", dest.parent_path().string(), ec.message()));
    if (fs::is_regular_file(dest, ec) && fs::file_size(dest, ec) == expected.size) return dest;  // downloaded before

    // A .part continues only if it was started for this very file (same sha256 and size).
    uint64_t offset = 0;
    if (fs::exists(part, ec)) {
        std::string text;
        if (FILE* f = std::fopen(meta.c_str(), "rb")) {
            text.resize(4096);
            text.resize(std::fread(text.data(), 1, text.size(), f));
            std::fclose(f);
        }
        auto j = parseBoundedJson(text, 4096, 4, 16);
        const uint64_t have = fs::file_size(part, ec);
        if (!ec && j && j->is_object() && j->value("sha256", "") == expected.sha256 && j->value("size", uint64_t(0)) == expected.size &&
            have <= expected.size)
            offset = have;
    }
    {
        const std::string m = nlohmann::json{{"repo", req.repo}, {"file", req.file}, {"sha256", expected.sha256}, {"size", expected.size}}.dump();
        FILE* f = std::fopen(meta.c_str(), "wb");
        if (!f || std::fwrite(m.data(), 1, m.size(), f) != m.size()) {
            if (f) std::fclose(f);
            return fail(ErrorKind::Io, fmt::format("cannot write {}", meta.string()));
        }
        std::fclose(f);
    }
    struct statvfs vfs{};
    if (::statvfs(dest.parent_path().c_str(), &vfs) == 0) {
        const uint64_t free = uint64_t(vfs.f_bavail) * uint64_t(vfs.f_frsize);
        const uint64_t needed = expected.size - offset + (uint64_t(64) << 20);
        if (free < needed)
            return fail(ErrorKind::Io, fmt::format("not enough disk space for {}: it needs {}, {} has {} free", what,
                                                   formatBytes(needed), dest.parent_path().string(), formatBytes(free)));
    }

    const int fd = ::open(part.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) return fail(ErrorKind::Io, fmt::format("cannot write {}: {}", part.string(), std::strerror(errno)));
    std::unique_ptr<int, void (*)(int*)> closer(new int(fd), [](int* p) { ::close(*p); delete p; });
    if (::ftruncate(fd, off_t(offset)) != 0) return fail(ErrorKind::Io, fmt::format("cannot write {}", part.string()));
    Sha256 sha;
    {  // the bytes already there count in the hash
        std::vector<char> buf(1 << 20);
        uint64_t at = 0;
        while (at < offset) {
            const ssize_t n = ::pread(fd, buf.data(), size_t(std::min<uint64_t>(buf.size(), offset - at)), off_t(at));
            if (n <= 0) return fail(ErrorKind::Io, fmt::format("cannot read {}", part.string()));
            sha.update(buf.data(), size_t(n));
            at += uint64_t(n);
            if (cancelled(req.cancel)) return fail(ErrorKind::Cancelled, "cancelled");
        }
    }

    const uint64_t resumedFrom = offset;
    const auto started = Clock::now();
    auto lastReport = Clock::time_point{};
    uint64_t transferred = 0;  // in this download
    auto report = [&](bool force) {
        if (!req.progress) return;
        const auto now = Clock::now();
        if (!force && now - lastReport < std::chrono::milliseconds(100)) return;
        lastReport = now;
        const double seconds = std::chrono::duration<double>(now - started).count();
        DownloadProgress p{offset, expected.size, resumedFrom, seconds > 0 ? double(transferred) / seconds : 0, -1};
        if (p.bytesPerSecond > 0) p.secondsLeft = double(expected.size - offset) / p.bytesPerSecond;
        req.progress(p);
    };
    report(true);

    const std::string url = resolveUrl(o, req.repo, req.revision, req.file);
    int failures = 0;    // tries in a row that failed (the last one may have brought bytes)
    int resumes = 0;     // every try, bounded
    bool writeFailed = false, tooLong = false;
    while (offset < expected.size) {
        Exchange ex;
        const uint64_t startedAt = offset;
        if (offset > 0) ex.headers.push_back(fmt::format("Range: bytes={}-", offset));
        ex.keepGoing = [&] { return !cancelled(req.cancel); };
        ex.sink = [&](long status, const char* data, size_t n) {
            if (status == 200 && startedAt > 0 && offset == startedAt) {
                // The server sent the whole file instead of the rest: start over.
                if (::ftruncate(fd, 0) != 0) return writeFailed = true, false;
                offset = 0;
                sha.reset();
            }
            if (offset + n > expected.size) return tooLong = true, false;  // longer than the hub said
            size_t done = 0;
            while (done < n) {
                const ssize_t w = ::pwrite(fd, data + done, n - done, off_t(offset + done));
                if (w < 0 && errno == EINTR) continue;
                if (w <= 0) return writeFailed = true, false;
                done += size_t(w);
            }
            sha.update(data, n);
            offset += n;
            transferred += n;
            report(false);
            return true;
        };
        auto r = hubGet(o, url, ex, what, /*retry=*/false);
        if (writeFailed) return fail(ErrorKind::Io, fmt::format("cannot write {}: {}", part.string(), std::strerror(errno)));
        if (cancelled(req.cancel)) return fail(ErrorKind::Cancelled, fmt::format("cancelled; {} is kept to resume", part.filename().string()));
        const bool progressed = offset > startedAt || (startedAt > 0 && offset < startedAt);
        if (r && r->status == 206) {
            auto cr = r->headers.find("content-range");
            auto start = cr == r->headers.end() ? std::nullopt : contentRangeStart(cr->second);
            if (!start || *start != startedAt) {  // not the part asked: drop what came and start over
                if (::ftruncate(fd, 0) != 0) return fail(ErrorKind::Io, fmt::format("cannot write {}", part.string()));
                offset = 0;
                sha.reset();
                if (++failures > o.retries) return fail(ErrorKind::Io, fmt::format("the hub sent another part of {} than the one asked", what));
                continue;
            }
        }
        if (r && r->status >= 200 && r->status < 300) {
            if (offset < expected.size && !progressed && ++failures > o.retries)
                return fail(ErrorKind::Io, fmt::format("the hub sent {} of {} bytes of {}", offset, expected.size, what));
            continue;  // complete, or a short answer to continue from
        }
        if (tooLong) {
            ::unlink(part.c_str());
            ::unlink(meta.c_str());
            return fail(ErrorKind::BadFile, fmt::format("the hub sent more than the {} bytes of {}: the download was deleted",
                                                        expected.size, what));
        }
        // A cut or stalled connection, 429 or 5xx: again from where the file is, a bounded number of times.
        std::optional<int> retryAfter;
        const Error err = r ? Error{} : r.error();
        if (r && (r->status == 429 || r->status >= 500)) {
            auto ra = r->headers.find("retry-after");
            retryAfter = std::clamp(ra == r->headers.end() ? 1 : retryAfterSeconds(ra->second, 1), 0, o.maxRetryAfterSeconds);
        } else if (r) {
            return fail(ErrorKind::Io, hubError(*r, what, o.token.has_value()).message);
        }
        // A try that brought bytes starts the count again: a connection cut every few megabytes
        // still gets the file, one that brings nothing gives up after o.retries tries.
        failures = progressed ? 1 : failures + 1;
        if (failures > o.retries || ++resumes > 1000) {
            if (r) return fail(ErrorKind::Io, hubError(*r, what, o.token.has_value()).message + fmt::format("; {} is kept to resume", part.filename().string()));
            return fail(ErrorKind::Io, fmt::format("{} ({}); {} is kept: run the same command again to resume", err.message, what,
                                                   part.filename().string()));
        }
        wait(o, retryAfter.value_or(progressed ? 0 : std::min(1 << std::min(failures - 1, 5), 30)));
    }
    report(true);
    if (::fsync(fd) != 0) return fail(ErrorKind::Io, fmt::format("cannot write {}: {}", part.string(), std::strerror(errno)));
    const std::string got = sha.hex();
    if (got != expected.sha256) {
        ::unlink(part.c_str());
        ::unlink(meta.c_str());
        return fail(ErrorKind::BadFile, fmt::format("{} does not match the hub's sha256 (expected {}, got {}): the download was deleted",
                                                    what, expected.sha256, got));
    }
    if (::rename(part.c_str(), dest.c_str()) != 0)
        return fail(ErrorKind::Io, fmt::format("cannot move {} into place: {}", part.string(), std::strerror(errno)));
    ::unlink(meta.c_str());
    if (const int dir = ::open(dest.parent_path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC); dir >= 0) {
        ::fsync(dir);
        ::close(dir);
    }
    return dest;
}

}  // namespace inferscope::catalog
