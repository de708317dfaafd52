#pragma once
// The GGUF reader's bounds-checked cursor and value decoding, shared by gguf_file.cpp (the header
// walk) and gguf_value.cpp (metadata values). Private to gguf/.

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <fmt/format.h>
#include <string>
#include <string_view>

#include "common/error.h"
#include "gguf/gguf_file.h"

namespace inferscope::gguf_detail {

// A count in the header is a claim. Reserving for it is capped in bytes by what remains of the
// file: a count the file cannot back then costs no more memory than the file's size, and entries
// actually present grow the vectors as they are read (tests/core/test_fuzz_regressions.cpp, ReaderHeap).
template <class T>
inline size_t reservation(uint64_t claimed, uint64_t remainingBytes) {
    return size_t(std::min(claimed, remainingBytes / sizeof(T)));
}

inline Error badFile(std::string message) { return Error{ErrorKind::BadFile, std::move(message)}; }

// Bounds-checked little-endian reader over the mapping. Every read states what it reads so
// that a truncation error says where the file ends too early.
class Cursor {
public:
    Cursor(const uint8_t* base, uint64_t size) : base_(base), size_(size) {}

    uint64_t pos() const { return pos_; }
    uint64_t remaining() const { return size_ - pos_; }

    // True once a read asked for more bytes than were left (the bytes ended, as opposed to a
    // value that is wrong): for a header read from a prefix of the file, "read more".
    bool ranOut() const { return ranOut_; }

    template <class T>
    Result<T> read(std::string_view what) {
        if (remaining() < sizeof(T))
            return ranOut_ = true, std::unexpected(badFile(fmt::format(
                "truncated: {} at byte {} needs {} bytes, file has {}", what, pos_, sizeof(T), size_)));
        T v;
        std::memcpy(&v, base_ + pos_, sizeof(T));
        pos_ += sizeof(T);
        return v;
    }

    Result<std::string_view> readString(std::string_view what, uint64_t maxLength) {
        auto len = read<uint64_t>(what);
        if (!len) return std::unexpected(len.error());
        if (*len > maxLength)
            return std::unexpected(badFile(fmt::format(
                "{} at byte {} has absurd length {} (limit {})", what, pos_ - 8, *len, maxLength)));
        if (*len > remaining())
            return ranOut_ = true, std::unexpected(badFile(fmt::format(
                "truncated: {} at byte {} needs {} bytes, file has {}", what, pos_, *len, size_)));
        std::string_view s(reinterpret_cast<const char*>(base_ + pos_), size_t(*len));
        pos_ += *len;
        return s;
    }

    Result<const uint8_t*> skip(uint64_t n, std::string_view what) {
        if (n > remaining())
            return ranOut_ = true, std::unexpected(badFile(fmt::format(
                "truncated: {} at byte {} needs {} bytes, file has {}", what, pos_, n, size_)));
        const uint8_t* p = base_ + pos_;
        pos_ += n;
        return p;
    }

private:
    const uint8_t* base_;
    uint64_t size_;
    uint64_t pos_ = 0;
    bool ranOut_ = false;
};

inline bool validType(uint32_t t) { return t <= uint32_t(GgufType::F64); }

// A value of `type` at the cursor, for metadata key `key` (as shown in messages): strings and
// arrays point into the mapping; every length is checked against the bytes left.
Result<GgufValue> readValue(Cursor& c, GgufType type, std::string_view key);
// "u32", "array of string": a value's type as messages name it.
std::string describeValue(const GgufValue& v);

}  // namespace inferscope::gguf_detail
