#include "common/kernel_set.h"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

#include <cstdio>
#include <cstdlib>
#include <string_view>
#include <vector>

namespace inferscope {
namespace {

// What the CPU (and the operating system, which must save the wider registers) supports, asked
// of libgcc's cpuid table. Each set is compiled with exactly these -m flags (core/CMakeLists.txt).
struct Feature {
    const char* name;
    bool present;
};

#if defined(__x86_64__) || defined(__i386__)
// CPUID leaf 1, ECX bit 29 (clang 16's __builtin_cpu_supports has no "f16c"; the registers' OS
// support is the AVX check's).
bool hasF16c() {
    unsigned a = 0, b = 0, c = 0, d = 0;
    return __get_cpuid(1, &a, &b, &c, &d) && (c & bit_F16C);
}
#endif

std::vector<Feature> featuresOf(KernelSet set) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_cpu_init();
    switch (set) {
        case KernelSet::Portable: return {};
        case KernelSet::Avx2:
            return {{"AVX2", bool(__builtin_cpu_supports("avx2"))},
                    {"FMA", bool(__builtin_cpu_supports("fma"))},
                    {"F16C", hasF16c()}};
        case KernelSet::Avx512: {
            auto f = featuresOf(KernelSet::Avx2);
            f.push_back({"AVX-512 F", bool(__builtin_cpu_supports("avx512f"))});
            f.push_back({"AVX-512 BW", bool(__builtin_cpu_supports("avx512bw"))});
            f.push_back({"AVX-512 DQ", bool(__builtin_cpu_supports("avx512dq"))});
            f.push_back({"AVX-512 VL", bool(__builtin_cpu_supports("avx512vl"))});
            return f;
        }
    }
#endif
    (void)set;
    return {};
}

// "portable, avx2": the sets this machine runs.
std::string runnableSets() {
    std::string runs;
    for (KernelSet s : kKernelSets)
        if (kernelSetUnavailableReason(s).empty()) runs += (runs.empty() ? "" : ", ") + std::string(kernelSetName(s));
    return runs;
}

void reportOnce(const std::string& message) {
    static std::atomic<bool> reported{false};
    if (!reported.exchange(true)) std::fprintf(stderr, "inferscope: %s\n", message.c_str());
}

}  // namespace

namespace kernel_set_detail {

std::atomic<int> active{-1};

KernelSet chooseAtFirstUse() {
    // Two threads may get here at once; they choose the same set.
    auto chosen = kernelSetFromEnvironment();
    if (!chosen) reportOnce(chosen.error().message + "; using the " + kernelSetName(bestKernelSet()) + " kernels");
    const KernelSet set = chosen ? *chosen : bestKernelSet();
    int expected = -1;
    active.compare_exchange_strong(expected, int(set), std::memory_order_relaxed);
    return KernelSet(active.load(std::memory_order_relaxed));
}

}  // namespace kernel_set_detail

const char* kernelSetName(KernelSet set) {
    switch (set) {
        case KernelSet::Portable: return "portable";
        case KernelSet::Avx2: return "avx2";
        case KernelSet::Avx512: return "avx512";
    }
    return "?";
}

const char* kernelSetInstructions(KernelSet set) {
    switch (set) {
        case KernelSet::Portable: return "x86-64 baseline (SSE2)";
        case KernelSet::Avx2: return "AVX2 + FMA + F16C";
        case KernelSet::Avx512: return "AVX-512 F/BW/DQ/VL + AVX2 + FMA + F16C";
    }
    return "?";
}

#if defined(__x86_64__) || defined(__i386__)
#define INFERSCOPE_CPU_HAS(feature) (__builtin_cpu_init(), __builtin_cpu_supports(feature))
#else
#define INFERSCOPE_CPU_HAS(feature) false
#endif

bool cpuHasAvx512Vnni() {
    static const bool has = INFERSCOPE_CPU_HAS("avx512vnni");
    return has;
}

bool cpuHasAvx512Bf16() {
    static const bool has = INFERSCOPE_CPU_HAS("avx512bf16");
    return has;
}

std::string kernelSetExtensions(KernelSet set) {
    std::string extensions;
    if (set != KernelSet::Avx512) return extensions;
    if (cpuHasAvx512Vnni()) extensions = "VNNI";
    if (cpuHasAvx512Bf16()) extensions += extensions.empty() ? "BF16" : " + BF16";
    return extensions;
}

bool kernelSetBuilt(KernelSet set) {
#if defined(INFERSCOPE_X86_KERNEL_SETS)
    return set == KernelSet::Portable || set == KernelSet::Avx2 || set == KernelSet::Avx512;
#else
    return set == KernelSet::Portable;
#endif
}

std::string kernelSetUnavailableReason(KernelSet set) {
    if (!kernelSetBuilt(set)) return std::string("this build has no ") + kernelSetName(set) + " kernels";
    std::string missing;
    for (const Feature& f : featuresOf(set))
        if (!f.present) missing += (missing.empty() ? "" : ", ") + std::string(f.name);
    return missing.empty() ? std::string() : "this CPU lacks " + missing;
}

KernelSet bestKernelSet() {
    for (KernelSet set : {KernelSet::Avx512, KernelSet::Avx2})
        if (kernelSetUnavailableReason(set).empty()) return set;
    return KernelSet::Portable;
}

Result<KernelSet> kernelSetFromEnvironment() {
    const char* value = std::getenv("INFERSCOPE_KERNELS");
    if (!value || !*value) return bestKernelSet();
    const std::string_view name(value);
    for (KernelSet set : kKernelSets) {
        if (name != kernelSetName(set)) continue;
        if (const std::string why = kernelSetUnavailableReason(set); !why.empty())
            return fail(ErrorKind::Unsupported, "INFERSCOPE_KERNELS=" + std::string(name) + " refused: " + why +
                                                    " (this machine runs: " + runnableSets() + ")");
        return set;
    }
    return fail(ErrorKind::InvalidArgument,
                "INFERSCOPE_KERNELS=" + std::string(name) + " is not a kernel set (portable, avx2 or avx512)");
}

Result<void> selectKernelSet(KernelSet set) {
    if (const std::string why = kernelSetUnavailableReason(set); !why.empty())
        return fail(ErrorKind::Unsupported, std::string("the ") + kernelSetName(set) + " kernels cannot run here: " + why);
    kernel_set_detail::active.store(int(set), std::memory_order_relaxed);
    return {};
}

}  // namespace inferscope
