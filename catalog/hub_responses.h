#pragma once
// What the Hugging Face hub answers, parsed as untrusted input: pure functions over bytes already
// bounded by the transfer (hub_client.cpp), never throwing, never repeating the input in an error.
// Fuzzed by fuzz/fuzz_hub_responses.cpp. The shapes are the hub API as huggingface/huggingface_hub
// reads it (src/huggingface_hub/hf_api.py: list_models, list_repo_tree, RepoFile; utils/_pagination.py).

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace inferscope::catalog {

// The most bytes a listing may take (the transfer stops past it): a search page of 100 repos is
// ~30 KB, a tree of a GGUF repository with a few hundred files ~100 KB.
inline constexpr uint64_t kMaxListingBytes = uint64_t(8) << 20;
// The most bytes of response headers kept for one response.
inline constexpr uint64_t kMaxHeaderBytes = uint64_t(64) << 10;

struct HubRepo {
    std::string id;          // "org/name"
    uint64_t downloads = 0;
    uint64_t likes = 0;
    bool gated = false;      // "auto" / "manual" / true: the repository asks for its conditions to be accepted
    std::string lastModified;
};
// GET /api/models?search=...: an array of repositories. Nothing when the body is not one.
std::optional<std::vector<HubRepo>> parseSearchResponse(std::string_view body);

struct HubFile {
    std::string path;     // in the repository ("Q4_K_M/model-Q4_K_M.gguf")
    uint64_t size = 0;
    std::string sha256;   // the LFS object id (lowercase hex, 64), "" for a file not in LFS
};
// GET /api/models/{repo}/tree/{revision}?recursive=true: its files (directories dropped).
std::optional<std::vector<HubFile>> parseTreeResponse(std::string_view body);

// A repository id as the hub allows them ("org/name": letters, digits, '-', '_', '.'; no "--" or
// "..", at most 96 characters per part).
bool validRepoId(std::string_view repo);
// A file's path in a repository: relative, '/'-separated, no empty, "." or ".." part, no control bytes.
bool validRepoPath(std::string_view path);

// The URL of a `Link: <url>; rel="next"` header (pagination), if any.
std::optional<std::string> nextPageLink(std::string_view linkHeader);
// Retry-After as seconds (a number of seconds; an HTTP date is taken as `fallback`).
int retryAfterSeconds(std::string_view value, int fallback);
// Content-Range "bytes START-END/TOTAL": START, or nothing.
std::optional<uint64_t> contentRangeStart(std::string_view value);

// Where a redirect goes, resolved against the URL it came from: an absolute Location as given, a
// path ("/x") on the same origin. Nothing for anything else (no scheme other than http(s)).
std::optional<std::string> resolveRedirect(std::string_view from, std::string_view location);
// "scheme://host:port" of a URL (the port written only when given), lowercase; "" if not http(s).
std::string originOf(std::string_view url);

}  // namespace inferscope::catalog
