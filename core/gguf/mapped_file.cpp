#include "gguf/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fmt/format.h>

namespace inferscope {

Result<MappedFile> MappedFile::open(const std::filesystem::path& path) {
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
    void* addr = ::mmap(nullptr, size_t(st.st_size), PROT_READ, MAP_PRIVATE, fd, 0);
    const int err = errno;
    ::close(fd);  // the mapping keeps the file alive
    if (addr == MAP_FAILED)
        return fail(ErrorKind::Io, fmt::format("cannot map {}: {}", path.string(), std::strerror(err)));
    MappedFile file;
    file.data_ = static_cast<const uint8_t*>(addr);
    file.size_ = uint64_t(st.st_size);
    file.mapped_ = true;
    return file;
}

MappedFile MappedFile::fromBytes(std::vector<uint8_t> bytes) {
    MappedFile file;
    file.owned_ = std::move(bytes);
    file.data_ = file.owned_.data();
    file.size_ = file.owned_.size();
    return file;
}

MappedFile::MappedFile(MappedFile&& other) noexcept { *this = std::move(other); }

MappedFile& MappedFile::operator=(MappedFile&& other) noexcept {
    if (this == &other) return *this;
    if (mapped_) ::munmap(const_cast<uint8_t*>(data_), size_);
    owned_ = std::move(other.owned_);
    mapped_ = other.mapped_;
    size_ = other.size_;
    data_ = mapped_ ? other.data_ : owned_.data();
    other.data_ = nullptr;
    other.size_ = 0;
    other.mapped_ = false;
    return *this;
}

MappedFile::~MappedFile() {
    if (mapped_) ::munmap(const_cast<uint8_t*>(data_), size_);
}

void MappedFile::populate(uint64_t offset, uint64_t length) const {
    if (!mapped_ || offset >= size_) return;
    length = std::min(length, size_ - offset);
    const uint64_t page = uint64_t(::sysconf(_SC_PAGESIZE));
    const uint64_t begin = offset / page * page;
    void* addr = const_cast<uint8_t*>(data_) + begin;
    const size_t len = size_t(offset + length - begin);
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
