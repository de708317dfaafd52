// Kernel sets (common/kernel_set.h): which set runs, what a forced one does, and that the sets
// are different code behind the same functions. The kernels' results per set are checked by the
// kernel suites, which ctest runs once per set (tests/CMakeLists.txt: EACH_KERNEL_SET).
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "backend/kernel_table.h"
#include "common/kernel_set.h"
#include "gguf/decode_kernels.h"

using namespace inferscope;

namespace {

// Sets INFERSCOPE_KERNELS for one scope (unset when value is null).
class ScopedKernelsVariable {
public:
    explicit ScopedKernelsVariable(const char* value) {
        if (const char* old = std::getenv("INFERSCOPE_KERNELS")) old_ = old, hadOld_ = true;
        if (value) ::setenv("INFERSCOPE_KERNELS", value, 1);
        else ::unsetenv("INFERSCOPE_KERNELS");
    }
    ~ScopedKernelsVariable() {
        if (hadOld_) ::setenv("INFERSCOPE_KERNELS", old_.c_str(), 1);
        else ::unsetenv("INFERSCOPE_KERNELS");
    }

private:
    std::string old_;
    bool hadOld_ = false;
};

bool runs(KernelSet set) { return kernelSetUnavailableReason(set).empty(); }

}  // namespace

TEST(KernelSet, PortableAlwaysRunsAndTheBestIsTheWidestThatRuns) {
    EXPECT_TRUE(runs(KernelSet::Portable));
    EXPECT_TRUE(runs(bestKernelSet()));
    for (KernelSet wider : kKernelSets)
        if (int(wider) > int(bestKernelSet())) {
            EXPECT_FALSE(runs(wider)) << kernelSetName(wider);
        }
    EXPECT_EQ(std::string(kernelSetName(KernelSet::Avx2)), "avx2");
    EXPECT_EQ(std::string(kernelSetInstructions(KernelSet::Avx2)), "AVX2 + FMA + F16C");
    // The run-time additions are the avx512 set's only, named as this CPU has them.
    EXPECT_EQ(kernelSetExtensions(KernelSet::Portable), "");
    EXPECT_EQ(kernelSetExtensions(KernelSet::Avx2), "");
    __builtin_cpu_init();
    const bool vnni = __builtin_cpu_supports("avx512vnni"), bf16 = __builtin_cpu_supports("avx512bf16");
    EXPECT_EQ(kernelSetExtensions(KernelSet::Avx512), std::string(vnni ? "VNNI" : "") + (vnni && bf16 ? " + " : "") + (bf16 ? "BF16" : ""));
}

TEST(KernelSet, TheVariableForcesARunnableSetAndRefusesOthersByName) {
    {
        ScopedKernelsVariable unset(nullptr);
        EXPECT_EQ(kernelSetFromEnvironment().value(), bestKernelSet());
    }
    {
        ScopedKernelsVariable portable("portable");
        EXPECT_EQ(kernelSetFromEnvironment().value(), KernelSet::Portable);
    }
    {
        ScopedKernelsVariable bogus("sse9");
        const auto r = kernelSetFromEnvironment();
        ASSERT_FALSE(r);
        EXPECT_EQ(r.error().message, "INFERSCOPE_KERNELS=sse9 is not a kernel set (portable, avx2 or avx512)");
    }
    for (KernelSet set : kKernelSets) {
        if (runs(set)) continue;
        ScopedKernelsVariable forced(kernelSetName(set));
        const auto r = kernelSetFromEnvironment();
        ASSERT_FALSE(r);
        EXPECT_EQ(r.error().kind, ErrorKind::Unsupported);
        // e.g. "INFERSCOPE_KERNELS=avx512 refused: this CPU lacks AVX-512 F, BW, DQ, VL (this machine runs: portable, avx2)"
        EXPECT_EQ(r.error().message.rfind(std::string("INFERSCOPE_KERNELS=") + kernelSetName(set) + " refused: this CPU lacks ", 0), 0u)
            << r.error().message;
        EXPECT_NE(r.error().message.find("(this machine runs: portable"), std::string::npos) << r.error().message;
    }
}

TEST(KernelSet, SelectingSwitchesEveryTableAndRefusesWhatCannotRun) {
    const KernelSet before = activeKernelSet();
    for (KernelSet set : kKernelSets) {
        SCOPED_TRACE(kernelSetName(set));
        const auto selected = selectKernelSet(set);
        if (!runs(set)) {
            ASSERT_FALSE(selected);
            EXPECT_EQ(selected.error().message.rfind(std::string("the ") + kernelSetName(set) + " kernels cannot run here: ", 0), 0u);
            EXPECT_EQ(activeKernelSet(), before);  // nothing changed
            continue;
        }
        ASSERT_TRUE(selected) << selected.error().message;
        EXPECT_EQ(activeKernelSet(), set);
        EXPECT_EQ(&activeBackendKernels(), &backendKernels(set));
        // The sets are different code: only the portable one has no integer K-quant kernel.
        EXPECT_EQ(activeBackendKernels().kquantKernelFor(uint32_t(GgmlType::Q4_K)), set != KernelSet::Portable);
        EXPECT_EQ(activeBackendKernels().hasInt8BlockKernel(GgmlType::Q8_0), set != KernelSet::Portable);
        EXPECT_TRUE(decodeKernels(set).isQuantizedBlockType(GgmlType::Q4_K));
    }
    ASSERT_TRUE(selectKernelSet(before));
    for (KernelSet a : kKernelSets)
        for (KernelSet b : kKernelSets)
            if (a != b && kernelSetBuilt(a) && kernelSetBuilt(b)) {
                EXPECT_NE(backendKernels(a).gemv, backendKernels(b).gemv);
                EXPECT_NE(decodeKernels(a).dequantizeRow, decodeKernels(b).dequantizeRow);
            }
}
