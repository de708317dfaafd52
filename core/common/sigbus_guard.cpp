#include "common/sigbus_guard.h"

#include <signal.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <mutex>

namespace inferscope::sigbus {
namespace {

constexpr int kSlots = 64;

struct Slot {
    std::atomic<bool> taken{false};
    std::atomic<uintptr_t> begin{0};  // 0 while being set up or torn down: the handler skips it
    std::atomic<uintptr_t> end{0};
    std::atomic<bool> faulted{false};
};
Slot gSlots[kSlots];
uintptr_t gPageSize = 4096;
struct sigaction gPrevious {};
std::once_flag gInstalled;

// Async-signal-safe: atomics, raw syscalls, sigaction and raise only.
void onSigbus(int sig, siginfo_t* info, void* context) {
    const auto addr = reinterpret_cast<uintptr_t>(info->si_addr);
    for (Slot& s : gSlots) {
        const uintptr_t begin = s.begin.load(std::memory_order_acquire);
        const uintptr_t end = s.end.load(std::memory_order_acquire);
        if (begin == 0 || addr < begin || addr >= end) continue;
        // Every page from the faulting one on lies past the file's new end: replace them all at once.
        const uintptr_t page = addr & ~(gPageSize - 1);
        const long r = syscall(SYS_mmap, page, end - page, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
        if (r == -1) break;  // cannot patch: treat as not ours
        s.faulted.store(true, std::memory_order_release);
        return;  // the faulting read is retried on the zero pages
    }
    if (gPrevious.sa_flags & SA_SIGINFO) {
        if (gPrevious.sa_sigaction) return gPrevious.sa_sigaction(sig, info, context);
    } else if (gPrevious.sa_handler != SIG_DFL && gPrevious.sa_handler != SIG_IGN) {
        return gPrevious.sa_handler(sig);
    }
    // The default action, as if we had never been here: the process dies of SIGBUS once the
    // handler returns (the faulting instruction runs again, or the raised signal is delivered).
    struct sigaction dfl {};
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    sigaction(SIGBUS, &dfl, nullptr);
    raise(SIGBUS);
}

void install() {
    gPageSize = uintptr_t(sysconf(_SC_PAGESIZE));
    struct sigaction sa {};
    sa.sa_sigaction = onSigbus;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGBUS, &sa, &gPrevious);
}

}  // namespace

int guardMapping(const void* base, size_t length) {
    if (!base || length == 0) return -1;
    std::call_once(gInstalled, install);
    for (int i = 0; i < kSlots; ++i) {
        Slot& s = gSlots[i];
        bool expected = false;
        if (!s.taken.compare_exchange_strong(expected, true, std::memory_order_acq_rel)) continue;
        const auto begin = reinterpret_cast<uintptr_t>(base);
        s.faulted.store(false, std::memory_order_relaxed);
        s.end.store((begin + length + gPageSize - 1) & ~(gPageSize - 1), std::memory_order_release);
        s.begin.store(begin, std::memory_order_release);
        return i;
    }
    return -1;
}

void unguardMapping(int slot) {
    if (slot < 0 || slot >= kSlots) return;
    Slot& s = gSlots[slot];
    s.begin.store(0, std::memory_order_release);
    s.end.store(0, std::memory_order_release);
    s.faulted.store(false, std::memory_order_relaxed);
    s.taken.store(false, std::memory_order_release);
}

bool mappingFaulted(int slot) {
    return slot >= 0 && slot < kSlots && gSlots[slot].faulted.load(std::memory_order_acquire);
}

}  // namespace inferscope::sigbus
