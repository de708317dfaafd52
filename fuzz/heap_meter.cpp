#include "heap_meter.h"

#include <atomic>
#include <cstddef>

#if defined(__SANITIZE_ADDRESS__)
#define INFERSCOPE_HEAP_METER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define INFERSCOPE_HEAP_METER_ASAN 1
#endif
#endif

#ifdef INFERSCOPE_HEAP_METER_ASAN
// The sanitizer allocator's interface (compiler-rt's sanitizer/allocator_interface.h, which GCC
// does not install; libasan has the functions).
extern "C" {
int __sanitizer_install_malloc_and_free_hooks(void (*malloc_hook)(const volatile void*, size_t),
                                              void (*free_hook)(const volatile void*));
int __sanitizer_get_ownership(const volatile void* p);
size_t __sanitizer_get_allocated_size(const volatile void* p);
}
#else
#include <malloc.h>

#include <cstdlib>
#include <new>
#endif

namespace inferscope::fuzz {
namespace {

std::atomic<int64_t> gLive{0};      // bytes allocated and not freed, since the program started
std::atomic<int64_t> gBase{0};      // gLive at heapMeterStart()
std::atomic<int64_t> gPeak{0};      // highest gLive since heapMeterStart()
std::atomic<uint64_t> gLargest{0};  // largest single allocation since heapMeterStart()

void counted(size_t size) {
    const int64_t live = gLive.fetch_add(int64_t(size), std::memory_order_relaxed) + int64_t(size);
    int64_t peak = gPeak.load(std::memory_order_relaxed);
    while (live > peak && !gPeak.compare_exchange_weak(peak, live, std::memory_order_relaxed)) {}
    uint64_t largest = gLargest.load(std::memory_order_relaxed);
    while (size > largest && !gLargest.compare_exchange_weak(largest, size, std::memory_order_relaxed)) {}
}
void released(size_t size) { gLive.fetch_sub(int64_t(size), std::memory_order_relaxed); }

#ifdef INFERSCOPE_HEAP_METER_ASAN
// The sanitizer allocator calls these for every malloc/new and free/delete of the process.
void onMalloc(const volatile void*, size_t size) { counted(size); }
void onFree(const volatile void* p) {
    if (p && __sanitizer_get_ownership(p)) released(__sanitizer_get_allocated_size(p));
}
const bool gHooked = __sanitizer_install_malloc_and_free_hooks(onMalloc, onFree) != 0;
#endif

}  // namespace

void heapMeterStart() {
    const int64_t live = gLive.load(std::memory_order_relaxed);
    gBase.store(live, std::memory_order_relaxed);
    gPeak.store(live, std::memory_order_relaxed);
    gLargest.store(0, std::memory_order_relaxed);
}
uint64_t heapMeterPeak() {
    const int64_t d = gPeak.load(std::memory_order_relaxed) - gBase.load(std::memory_order_relaxed);
    return d > 0 ? uint64_t(d) : 0;
}
uint64_t heapMeterLargest() { return gLargest.load(std::memory_order_relaxed); }

#ifdef INFERSCOPE_HEAP_METER_ASAN
bool heapMeterWorks() { return gHooked; }
#else
bool heapMeterWorks() { return true; }
#endif

}  // namespace inferscope::fuzz

#ifndef INFERSCOPE_HEAP_METER_ASAN
// Without a sanitizer: every C++ allocation of the process (SentencePiece's included, since the
// executable's operator new interposes the library's) goes through these. Sizes are the
// allocator's usable sizes, counted the same way at new and at delete.
namespace {

void* allocate(size_t size, size_t alignment, bool nothrow) {
    if (size == 0) size = 1;
    void* p = alignment > alignof(std::max_align_t) ? std::aligned_alloc(alignment, (size + alignment - 1) / alignment * alignment)
                                                     : std::malloc(size);
    if (!p) {
        if (nothrow) return nullptr;
        throw std::bad_alloc();
    }
    inferscope::fuzz::counted(malloc_usable_size(p));
    return p;
}
void release(void* p) {
    if (!p) return;
    inferscope::fuzz::released(malloc_usable_size(p));
    std::free(p);
}

}  // namespace

void* operator new(size_t n) { return allocate(n, 0, false); }
void* operator new[](size_t n) { return allocate(n, 0, false); }
void* operator new(size_t n, const std::nothrow_t&) noexcept { return allocate(n, 0, true); }
void* operator new[](size_t n, const std::nothrow_t&) noexcept { return allocate(n, 0, true); }
void* operator new(size_t n, std::align_val_t a) { return allocate(n, size_t(a), false); }
void* operator new[](size_t n, std::align_val_t a) { return allocate(n, size_t(a), false); }
void* operator new(size_t n, std::align_val_t a, const std::nothrow_t&) noexcept { return allocate(n, size_t(a), true); }
void* operator new[](size_t n, std::align_val_t a, const std::nothrow_t&) noexcept { return allocate(n, size_t(a), true); }
void operator delete(void* p) noexcept { release(p); }
void operator delete[](void* p) noexcept { release(p); }
void operator delete(void* p, size_t) noexcept { release(p); }
void operator delete[](void* p, size_t) noexcept { release(p); }
void operator delete(void* p, std::align_val_t) noexcept { release(p); }
void operator delete[](void* p, std::align_val_t) noexcept { release(p); }
void operator delete(void* p, size_t, std::align_val_t) noexcept { release(p); }
void operator delete[](void* p, size_t, std::align_val_t) noexcept { release(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { release(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { release(p); }
#endif
