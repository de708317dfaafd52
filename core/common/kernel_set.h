#pragma once
// Kernel sets: the hand-written kernels (backend/kernels.cpp, the decode GEMV, the block decoders of
// gguf/quant_blocks.cpp) are compiled once per instruction set into one binary, each set in its
// own namespace (core/CMakeLists.txt), and one set runs, chosen at the first kernel call:
//   portable  any x86-64 CPU (SSE2)
//   avx2      AVX2 + FMA + F16C (Intel since Haswell, AMD since Zen)
//   avx512    the avx2 set's instructions plus AVX-512 F, BW, DQ, VL (Intel since Skylake-SP, AMD Zen 4)
// The fastest set this CPU runs is the default; INFERSCOPE_KERNELS=portable|avx2|avx512 forces one
// (a set the CPU lacks is refused). Every public kernel (gemv, rmsNorm, dequantizeRow, ...) calls
// the chosen set's through a table of function pointers: one indirect call per kernel call, no
// test in any loop.

#include <atomic>
#include <string>

#include "common/error.h"

namespace inferscope {

enum class KernelSet : int { Portable = 0, Avx2 = 1, Avx512 = 2 };
inline constexpr int kKernelSetCount = 3;
inline constexpr KernelSet kKernelSets[kKernelSetCount] = {KernelSet::Portable, KernelSet::Avx2, KernelSet::Avx512};

// "portable", "avx2", "avx512" (the names INFERSCOPE_KERNELS takes).
const char* kernelSetName(KernelSet set);
// The instructions a set uses, for people: "AVX2 + FMA + F16C".
const char* kernelSetInstructions(KernelSet set);
// The instructions a set adds at run time where this CPU has them, for people: the avx512 set's
// VNNI (decode of the 32-element block formats) and BF16 (prefill's rounding to bf16), as
// "VNNI + BF16"; "" where none.
std::string kernelSetExtensions(KernelSet set);
// Whether this CPU has them (asked once): the avx512 set's kernels choose their VNNI and BF16 paths
// by these.
bool cpuHasAvx512Vnni();
bool cpuHasAvx512Bf16();

// True when this binary contains the set (the avx2 and avx512 sets exist on x86-64 builds).
bool kernelSetBuilt(KernelSet set);
// Why this machine cannot run `set`: "" when it can, else e.g. "this build has no avx512 kernels" or
// "this CPU lacks AVX-512 F, BW, DQ, VL".
std::string kernelSetUnavailableReason(KernelSet set);
// The fastest built set this CPU runs.
KernelSet bestKernelSet();

namespace kernel_set_detail {
extern std::atomic<int> active;  // a KernelSet, or -1 before the first call
KernelSet chooseAtFirstUse();
}  // namespace kernel_set_detail

// The set the kernels run: chosen at the first call (INFERSCOPE_KERNELS when it names a set this
// machine runs, else bestKernelSet(); a refused override is reported on stderr once), then fixed.
inline KernelSet activeKernelSet() {
    const int s = kernel_set_detail::active.load(std::memory_order_relaxed);
    return s >= 0 ? KernelSet(s) : kernel_set_detail::chooseAtFirstUse();
}
// The active set's name, for `inferscope-cli info`, bench and the app's status bar.
inline const char* kernelSetName() { return kernelSetName(activeKernelSet()); }

// The set INFERSCOPE_KERNELS asks for (bestKernelSet() when unset or empty), or a message naming
// what is wrong: an unknown name, or a set this machine cannot run. The executables call this first
// and refuse to start on an error, so that a forced set is never silently replaced.
Result<KernelSet> kernelSetFromEnvironment();

// Makes `set` the active one (tests run every set this way; the executables after reading
// INFERSCOPE_KERNELS). Only while no kernel runs. Fails, changing nothing, when the machine cannot
// run it.
Result<void> selectKernelSet(KernelSet set);


}  // namespace inferscope
