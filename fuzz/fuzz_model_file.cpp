// libFuzzer entry point: every input is a whole model file (see model_file_target.h).
// Run by scripts/ci-fuzz.sh; crashes it finds are kept in tests/data/fuzz/ and replayed by ctest.
#include <cstddef>
#include <cstdint>

#include "model_file_target.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    inferscope::fuzz::runModelFile({data, size});
    return 0;
}
