#pragma once
// A heap buffer of trivially-copyable T aligned to 64 bytes (one cache line, one AVX-512 vector).
// Move-only. Contents are uninitialised after allocate() unless zero-filled.

#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <new>
#include <span>
#include <utility>

namespace inferscope {

template <class T>
class AlignedBuffer {
public:
    AlignedBuffer() = default;
    explicit AlignedBuffer(size_t count, bool zero = false) { allocate(count, zero); }
    AlignedBuffer(AlignedBuffer&& o) noexcept : data_(std::exchange(o.data_, nullptr)), size_(std::exchange(o.size_, 0)) {}
    AlignedBuffer& operator=(AlignedBuffer&& o) noexcept {
        if (this != &o) {
            std::free(data_);
            data_ = std::exchange(o.data_, nullptr);
            size_ = std::exchange(o.size_, 0);
        }
        return *this;
    }
    AlignedBuffer(const AlignedBuffer&) = delete;
    AlignedBuffer& operator=(const AlignedBuffer&) = delete;
    ~AlignedBuffer() { std::free(data_); }

    // Replaces the contents with `count` elements; throws std::bad_alloc when memory is short.
    void allocate(size_t count, bool zero = false) {
        std::free(data_);
        data_ = nullptr;
        size_ = 0;
        if (count == 0) return;
        const size_t bytes = (count * sizeof(T) + 63) / 64 * 64;
        data_ = static_cast<T*>(std::aligned_alloc(64, bytes));
        if (!data_) throw std::bad_alloc();
        if (zero) std::memset(static_cast<void*>(data_), 0, bytes);
        size_ = count;
    }

    T* data() { return data_; }
    const T* data() const { return data_; }
    size_t size() const { return size_; }
    size_t bytes() const { return size_ * sizeof(T); }
    T& operator[](size_t i) { return data_[i]; }
    const T& operator[](size_t i) const { return data_[i]; }
    std::span<T> span() { return {data_, size_}; }
    std::span<const T> span() const { return {data_, size_}; }

private:
    T* data_ = nullptr;
    size_t size_ = 0;
};

}  // namespace inferscope
