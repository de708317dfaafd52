#pragma once
// A client of the Hugging Face hub for GGUF models (libcurl, OpenSSL's SHA-256): search
// repositories, list a repository's GGUF files with their sizes and LFS sha256, read a file's GGUF
// header with HTTP range requests (a few MB, not the file) so that the fit uses the real shape,
// and download a file into our models folder — resumable (a .part file continued with Range after
// a cut connection or a restart), verified against the hub's sha256 before it is moved into place
// (a mismatch leaves no file where a model would be picked up), disk space checked first.
//
// The hub's rules, as huggingface/huggingface_hub follows them (src/huggingface_hub/constants.py,
// file_download.py, utils/_http.py): HF_ENDPOINT replaces https://huggingface.co; HF_TOKEN is sent
// as "Authorization: Bearer" to the hub's own origin only: `resolve` answers with a redirect to its
// CDN, which is followed without the token (redirects on the hub's origin keep it); the token is
// never written to a message or a log. 401/403 (gated)/404/429 (Retry-After)/5xx are each one
// line; 429, 5xx, cut and stalled connections are retried (bounded). Every body kept in memory is
// bounded (listings kMaxListingBytes, headers kMaxHeaderBytes, a GGUF header kMaxRemoteHeaderBytes).
//
// Blocking calls, Qt-free: the app runs them on a worker thread; progress callbacks run on the
// calling thread; `cancel` may be set from any thread and stops a transfer within ~100 ms.

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "catalog/hub_responses.h"
#include "catalog/model_summary.h"
#include "common/error.h"

namespace inferscope::catalog {

inline constexpr uint64_t kMaxRemoteHeaderBytes = uint64_t(64) << 20;

struct HubOptions {
    std::string endpoint = "https://huggingface.co";  // HF_ENDPOINT, without a trailing '/'
    std::optional<std::string> token;                  // HF_TOKEN
    // How a refusal's message tells the person to give a token, and what it calls the one given
    // (the CLI's defaults; the app has a field of its own).
    std::string tokenAdvice = "set HF_TOKEN";
    std::string tokenName = "HF_TOKEN";
    int connectTimeoutSeconds = 15;
    int stallTimeoutSeconds = 30;  // no byte received for this long: the transfer is dropped (and retried)
    int retries = 4;               // for each of: 429, 5xx, a cut or stalled connection
    int maxRetryAfterSeconds = 120;
    std::string userAgent = "inferscope/0.1";
    // How a retry waits (seconds); tests count the waits instead of sleeping.
    std::function<void(int seconds)> sleep;
    // HF_ENDPOINT and HF_TOKEN from the environment (HF_ENDPOINT checked: http(s)://host[:port][/path]).
    static Result<HubOptions> fromEnvironment();
};

// Repositories whose name matches `text` and that hold GGUF files, most downloaded first.
Result<std::vector<HubRepo>> searchGgufRepos(const HubOptions& options, std::string_view text, int limit = 20);

// The repository's .gguf files (every folder), at `revision`.
Result<std::vector<HubFile>> listGgufFiles(const HubOptions& options, std::string_view repo, std::string_view revision = "main");

// The file's GGUF header, read from its first bytes (4 MiB, more when the header is longer, up to
// kMaxRemoteHeaderBytes) and summarized as a local file would be. `bytesRead`: what it cost.
Result<ModelSummary> readRemoteHeader(const HubOptions& options, std::string_view repo, const HubFile& file,
                                      std::string_view revision = "main", uint64_t* bytesRead = nullptr,
                                      const std::atomic<bool>* cancel = nullptr);

struct DownloadProgress {
    uint64_t bytesDone = 0;     // of the file, the resumed part included
    uint64_t bytesTotal = 0;
    uint64_t resumedFrom = 0;   // bytes already there when this download started
    double bytesPerSecond = 0;  // over this download's transfers
    double secondsLeft = -1;    // -1 while unknown
};

struct DownloadRequest {
    std::string repo;                       // "org/name"
    std::string file;                       // its path in the repository
    std::string revision = "main";
    std::filesystem::path modelsFolder;     // the file goes to <modelsFolder>/<org>/<name>/<file>
    std::function<void(const DownloadProgress&)> progress;  // about 10 times a second, and at the end
    const std::atomic<bool>* cancel = nullptr;               // stops it, keeping the .part for later
    // The free bytes where the file goes (freeDiskSpace by default; tests: a full disk).
    std::function<std::optional<uint64_t>(const std::filesystem::path& folder)> freeSpace;
};

// Downloads (or resumes) the file and returns where it now is. Errors: the hub's (one line each),
// Io for the disk (no space, unwritable), BadFile for a size or sha256 that is not the hub's (the
// .part is deleted: the next attempt starts over), Cancelled (the .part is kept).
Result<std::filesystem::path> downloadModel(const HubOptions& options, const DownloadRequest& request);

// Where downloadModel puts a file, and the partial file beside it while it downloads.
std::filesystem::path downloadDestination(const std::filesystem::path& modelsFolder, std::string_view repo, std::string_view file);
std::filesystem::path partialFileOf(const std::filesystem::path& destination);

// What of a hub file is here already: all of it (at `path`), or the bytes a download would resume
// from (a .part started for this very file), or nothing.
struct LocalCopy {
    std::filesystem::path path;
    bool complete = false;
    uint64_t kept = 0;
};
LocalCopy localCopyOf(const std::filesystem::path& modelsFolder, std::string_view repo, const HubFile& file);

// The free bytes on the file system of `folder` (or of its nearest existing parent); nullopt when
// the system does not say. A download needs the rest of the file plus a margin.
std::optional<uint64_t> freeDiskSpace(const std::filesystem::path& folder);
inline constexpr uint64_t kDiskMargin = uint64_t(64) << 20;
uint64_t diskNeeded(const HubFile& file, uint64_t kept);

}  // namespace inferscope::catalog
