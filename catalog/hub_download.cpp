#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fmt/format.h>
#include <memory>

#include "catalog/hub_client.h"
#include "catalog/hub_transfer.h"
#include "catalog/source_files.h"

namespace inferscope::catalog {
namespace fs = std::filesystem;
using namespace detail;

namespace {

fs::path metaFileOf(const fs::path& part) { return part.string() + ".json"; }

// The bytes of `part` a download of `expected` continues from: all of them when its note says it
// was started for this very file (same sha256 and size), none otherwise.
uint64_t keptPart(const fs::path& part, const HubFile& expected) {
    std::error_code ec;
    if (!fs::exists(part, ec)) return 0;
    std::string text;
    if (FILE* f = std::fopen(metaFileOf(part).c_str(), "rb")) {
        text.resize(4096);
        text.resize(std::fread(text.data(), 1, text.size(), f));
        std::fclose(f);
    }
    auto j = parseBoundedJson(text, 4096, 4, 16);
    const uint64_t have = fs::file_size(part, ec);
    if (!ec && j && j->is_object() && j->value("sha256", "") == expected.sha256 && j->value("size", uint64_t(0)) == expected.size &&
        have <= expected.size)
        return have;
    return 0;
}

}  // namespace

std::optional<uint64_t> freeDiskSpace(const fs::path& folder) {
    // The folder may not exist yet: its nearest existing parent is on the same file system.
    fs::path at = folder;
    std::error_code ec;
    while (!at.empty() && !fs::exists(at, ec) && at != at.parent_path()) at = at.parent_path();
    struct statvfs vfs{};
    if (at.empty() || ::statvfs(at.c_str(), &vfs) != 0) return std::nullopt;
    return uint64_t(vfs.f_bavail) * uint64_t(vfs.f_frsize);
}

uint64_t diskNeeded(const HubFile& file, uint64_t kept) { return (file.size > kept ? file.size - kept : 0) + kDiskMargin; }

LocalCopy localCopyOf(const fs::path& modelsFolder, std::string_view repo, const HubFile& file) {
    LocalCopy copy;
    copy.path = downloadDestination(modelsFolder, repo, file.path);
    std::error_code ec;
    copy.complete = fs::is_regular_file(copy.path, ec) && fs::file_size(copy.path, ec) == file.size && !ec;
    if (!copy.complete) copy.kept = keptPart(partialFileOf(copy.path), file);
    return copy;
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
    const fs::path meta = metaFileOf(part);
    std::error_code ec;
    fs::create_directories(dest.parent_path(), ec);
    if (ec) return fail(ErrorKind::Io, fmt::format("cannot create {}: {}", dest.parent_path().string(), ec.message()));
    if (fs::is_regular_file(dest, ec) && fs::file_size(dest, ec) == expected.size) return dest;  // downloaded before

    // A .part continues only if it was started for this very file (same sha256 and size).
    uint64_t offset = keptPart(part, expected);
    // Room first: nothing is written when the rest of the file would not fit.
    const auto free = req.freeSpace ? req.freeSpace(dest.parent_path()) : freeDiskSpace(dest.parent_path());
    if (free && *free < diskNeeded(expected, offset))
        return fail(ErrorKind::Io, fmt::format("not enough disk space for {}: it needs {}, {} has {} free", what,
                                               formatBytes(diskNeeded(expected, offset)), dest.parent_path().string(), formatBytes(*free)));
    {
        const std::string m = nlohmann::json{{"repo", req.repo}, {"file", req.file}, {"sha256", expected.sha256}, {"size", expected.size}}.dump();
        FILE* f = std::fopen(meta.c_str(), "wb");
        if (!f || std::fwrite(m.data(), 1, m.size(), f) != m.size()) {
            if (f) std::fclose(f);
            return fail(ErrorKind::Io, fmt::format("cannot write {}", meta.string()));
        }
        std::fclose(f);
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
            return fail(ErrorKind::Io, hubError(*r, what, o).message);
        }
        // A try that brought bytes starts the count again: a connection cut every few megabytes
        // still gets the file, one that brings nothing gives up after o.retries tries.
        failures = progressed ? 1 : failures + 1;
        if (failures > o.retries || ++resumes > 1000) {
            if (r) return fail(ErrorKind::Io, hubError(*r, what, o).message + fmt::format("; {} is kept to resume", part.filename().string()));
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
