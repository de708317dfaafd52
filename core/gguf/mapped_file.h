#pragma once
// A read-only memory mapping of a whole file (or an owned byte buffer, for tests and fuzzing).
// Move-only; unmaps on destruction.

#include <cstdint>
#include <filesystem>
#include <span>
#include <vector>

#include "common/error.h"

namespace inferscope {

class MappedFile {
public:
    static Result<MappedFile> open(const std::filesystem::path& path);
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

private:
    const uint8_t* data_ = nullptr;
    uint64_t size_ = 0;
    bool mapped_ = false;            // true: data_ is an mmap to munmap
    std::vector<uint8_t> owned_;     // used by fromBytes
};

}  // namespace inferscope
