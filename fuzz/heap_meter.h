#pragma once
// Live heap bytes, measured around one phase of a fuzz input (what the GGUF reader allocates).
// heap_meter.cpp counts through the sanitizer allocator's hooks when built with ASan (the fuzzer,
// the sanitizer build) and through a replaced global operator new/delete otherwise (ctest).
// Single-threaded use: one phase measured at a time.

#include <cstdint>

namespace inferscope::fuzz {

// Starts a measurement: the peak and the largest allocation are counted from the live bytes now.
void heapMeterStart();
// Highest live heap bytes above the start since heapMeterStart().
uint64_t heapMeterPeak();
// Largest single allocation since heapMeterStart().
uint64_t heapMeterLargest();
// False when this build cannot measure (the numbers above are then 0).
bool heapMeterWorks();

}  // namespace inferscope::fuzz
