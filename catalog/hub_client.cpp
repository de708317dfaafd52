#include "catalog/hub_client.h"

#include <algorithm>
#include <cstdlib>
#include <fmt/format.h>

#include "catalog/hub_transfer.h"
#include "catalog/source_files.h"

namespace inferscope::catalog {
using namespace detail;

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
    const std::string url = fmt::format("{}/api/models?search={}&filter=gguf&sort=downloads&direction=-1&limit={}", o.endpoint,
                                        escapeQuery(text), std::clamp(limit, 1, 100));
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

}  // namespace inferscope::catalog
