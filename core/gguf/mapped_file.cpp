#include "gguf/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fmt/format.h>
#include <utility>

#include "common/sigbus_guard.h"

namespace inferscope {

Result<MappedFile> MappedFile::open(const std::filesystem::path& path, Pages pages) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return fail(ErrorKind::Io, fmt::format("cannot open {}: {}", path.string(), std::strerror(errno)));
    struct stat st{};
    if (::fstat(fd, &st) != 0) {
        const int err = errno;
        ::close(fd);
        return fail(ErrorKind::Io, fmt::format("cannot stat {}: {}", path.string(), std::strerror(err)));
    }
    if (!S_ISREG(st.st_mode)) {
        ::close(fd);
        return fail(ErrorKind::Io, fmt::format("{} is not a regular file", path.string()));
    }
    if (st.st_size == 0) {
        ::close(fd);
        return fail(ErrorKind::BadFile, fmt::format("{} is empty", path.string()));
    }
    const bool copy = pages == Pages::Private;
    void* addr = ::mmap(nullptr, size_t(st.st_size), copy ? PROT_READ | PROT_WRITE : PROT_READ, MAP_PRIVATE, fd, 0);
    if (addr == MAP_FAILED) {
        const int err = errno;
        ::close(fd);
        return fail(ErrorKind::Io, fmt::format("cannot map {}: {}", path.string(), std::strerror(err)));
    }
    MappedFile file;
    file.data_ = static_cast<const uint8_t*>(addr);
    file.size_ = uint64_t(st.st_size);
    file.mapped_ = true;
    file.private_ = copy;
    file.path_ = path.string();
    file.fd_ = fd;
    file.mtime_ = st.st_mtim;
    file.guardSlot_ = sigbus::guardMapping(addr, size_t(st.st_size));
    return file;
}

MappedFile MappedFile::fromBytes(std::vector<uint8_t> bytes) {
    MappedFile file;
    file.owned_ = std::move(bytes);
    file.data_ = file.owned_.data();
    file.size_ = file.owned_.size();
    return file;
}

Result<void> MappedFile::checkUnchanged() const {
    if (!mapped_) return {};
    const auto changed = [this](std::string_view how) {
        return fail(ErrorKind::Io, fmt::format("{} changed on disk while in use ({}); load it again", path_, how));
    };
    if (sigbus::mappingFaulted(guardSlot_)) return changed("it was truncated: reading it faulted");
    struct stat st{};
    if (fd_ >= 0 && ::fstat(fd_, &st) == 0) {
        if (uint64_t(st.st_size) != size_)
            return changed(fmt::format("{} bytes, was {}", uint64_t(st.st_size), size_));
        if (st.st_mtim.tv_sec != mtime_.tv_sec || st.st_mtim.tv_nsec != mtime_.tv_nsec)
            return changed("it was modified");
    }
    return {};
}

void MappedFile::release() {
    if (mapped_) {
        sigbus::unguardMapping(guardSlot_);
        ::munmap(const_cast<uint8_t*>(data_), size_);
    }
    if (fd_ >= 0) ::close(fd_);
    data_ = nullptr;
    size_ = 0;
    mapped_ = false;
    private_ = false;
    fd_ = -1;
    guardSlot_ = -1;
}

MappedFile::MappedFile(MappedFile&& other) noexcept { *this = std::move(other); }

MappedFile& MappedFile::operator=(MappedFile&& other) noexcept {
    if (this == &other) return *this;
    release();
    owned_ = std::move(other.owned_);
    mapped_ = other.mapped_;
    private_ = other.private_;
    size_ = other.size_;
    data_ = mapped_ ? other.data_ : owned_.data();
    path_ = std::move(other.path_);
    fd_ = std::exchange(other.fd_, -1);
    guardSlot_ = std::exchange(other.guardSlot_, -1);
    mtime_ = other.mtime_;
    other.data_ = nullptr;
    other.size_ = 0;
    other.mapped_ = false;
    return *this;
}

MappedFile::~MappedFile() { release(); }

void MappedFile::populate(uint64_t offset, uint64_t length) const {
    if (!mapped_ || offset >= size_) return;
    length = std::min(length, size_ - offset);
    const uint64_t page = uint64_t(::sysconf(_SC_PAGESIZE));
    const uint64_t begin = offset / page * page;
    void* addr = const_cast<uint8_t*>(data_) + begin;
    const size_t len = size_t(offset + length - begin);
    if (private_) {
#ifdef MADV_POPULATE_WRITE
        if (::madvise(addr, len, MADV_POPULATE_WRITE) == 0) return;
#endif
        // Each page written with its own first byte: the bytes stay the file's, the page becomes ours.
        auto* bytes = static_cast<volatile uint8_t*>(addr);
        for (size_t at = 0; at < len; at += size_t(page)) bytes[at] = bytes[at];
        return;
    }
#ifdef MADV_POPULATE_READ
    if (::madvise(addr, len, MADV_POPULATE_READ) == 0) return;
#endif
    ::madvise(addr, len, MADV_WILLNEED);
}

void MappedFile::release(uint64_t offset, uint64_t length) const {
    if (!mapped_ || offset >= size_) return;
    length = std::min(length, size_ - offset);
    const uint64_t page = uint64_t(::sysconf(_SC_PAGESIZE));
    const uint64_t begin = (offset + page - 1) / page * page, end = (offset + length) / page * page;
    if (end > begin) ::madvise(const_cast<uint8_t*>(data_) + begin, size_t(end - begin), MADV_DONTNEED);
}

}  // namespace inferscope
