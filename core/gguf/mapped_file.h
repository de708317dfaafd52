#pragma once
// A read-only memory mapping of a whole file (or an owned byte buffer, for tests and fuzzing).
// Move-only; unmaps on destruction.
//
// The file may change under the mapping. Deleting or renaming it over is harmless (the mapping
// keeps the old inode). Truncating it makes reads past the new end fault with SIGBUS: mappings are
// guarded (common/sigbus_guard.h), so such reads see zeros instead of killing the process, and
// checkUnchanged() reports it. Rewriting it in place changes what the mapping reads: checkUnchanged()
// notices a new size or modification time, from an fstat of the descriptor kept open.

#include <sys/types.h>

#include <cstdint>
#include <ctime>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

#include "common/error.h"

namespace inferscope {

class MappedFile {
public:
    // Shared: the page cache's pages, shared with every process mapping the file (the default).
    // Private: this process's own copy of each page it populates (a writable private mapping
    // whose pages populate() faults in for writing, so each becomes an anonymous copy; never
    // written after). On some virtual machines page-cache memory reads markedly slower than
    // anonymous memory (measured: 20 against 31 GB/s on the same host, bench/README.md). The
    // mapping stays file-backed: release() drops the copies and a later read faults the file's
    // bytes back in, as with Shared.
    enum class Pages { Shared, Private };
    static Result<MappedFile> open(const std::filesystem::path& path, Pages pages = Pages::Shared);
    static MappedFile fromBytes(std::vector<uint8_t> bytes);

    MappedFile() = default;
    MappedFile(MappedFile&& other) noexcept;
    MappedFile& operator=(MappedFile&& other) noexcept;
    MappedFile(const MappedFile&) = delete;
    MappedFile& operator=(const MappedFile&) = delete;
    ~MappedFile();

    std::span<const uint8_t> bytes() const { return {data_, size_}; }
    const uint8_t* data() const { return data_; }
    uint64_t size() const { return size_; }
    // Maps every page of [offset, offset + length) now, in one call (MADV_POPULATE_READ; read-ahead
    // advice on kernels before 5.14), instead of one page fault per 64 KiB on first use. Loading
    // a model calls it for the tensor data. Private pages: copied now (MADV_POPULATE_WRITE, or a
    // write of each page's first byte with its own value before 5.14). A no-op for owned bytes.
    void populate(uint64_t offset, uint64_t length) const;
    // Drops the pages wholly inside [offset, offset + length) from this process's resident set
    // (MADV_DONTNEED): for bytes that were converted and will not be read again. Safe on this
    // read-only private mapping: a later read faults the file's bytes back in.
    void release(uint64_t offset, uint64_t length) const;

    // Io error "<file> changed on disk while in use ..." once a read faulted past the file's end
    // (its data is zeros from there on) or the file's size or modification time differ from when
    // it was mapped; ok otherwise (and always for fromBytes).
    Result<void> checkUnchanged() const;

private:
    void release();

    const uint8_t* data_ = nullptr;
    uint64_t size_ = 0;
    bool mapped_ = false;            // true: data_ is an mmap to munmap
    bool private_ = false;           // Pages::Private
    std::vector<uint8_t> owned_;     // used by fromBytes
    // Mapped files only:
    std::string path_;               // as given to open(), for messages
    int fd_ = -1;                    // kept open to fstat the same inode later
    int guardSlot_ = -1;             // sigbus::guardMapping slot, -1 when unguarded
    timespec mtime_{};               // st_mtim when mapped
};

}  // namespace inferscope
