// Linked into the test executables that ctest runs once per kernel set (tests/CMakeLists.txt:
// EACH_KERNEL_SET, under INFERSCOPE_KERNELS=<set>): before any test, checks that the kernels run
// the set named, or skips every test with the reason when this machine cannot run it (the avx512
// set on a CPU without AVX-512).
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "common/kernel_set.h"

namespace {

using namespace inferscope;

class KernelSetEnvironment : public ::testing::Environment {
public:
    void SetUp() override {
        const char* name = std::getenv("INFERSCOPE_KERNELS");
        if (!name || !*name) return;  // run by hand: the default set
        for (KernelSet set : kKernelSets) {
            if (std::string(name) != kernelSetName(set)) continue;
            if (const std::string why = kernelSetUnavailableReason(set); !why.empty())
                GTEST_SKIP() << "the " << name << " kernel set cannot run here: " << why;
            ASSERT_EQ(kernelSetName(), std::string(name)) << "the kernels do not run the set INFERSCOPE_KERNELS names";
            return;
        }
        FAIL() << "INFERSCOPE_KERNELS=" << name << " names no kernel set";
    }
};

[[maybe_unused]] const auto* const registered = ::testing::AddGlobalTestEnvironment(new KernelSetEnvironment);

}  // namespace
