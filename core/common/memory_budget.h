#pragma once
// Does a model fit? Before the engine allocates weights and the KV cache it compares what they
// need with what the system and the process limits allow, so that a model too large for the
// machine is refused with figures and advice instead of being killed by the kernel half-way
// through a load (the KV cache is zero-filled at allocation: an over-large one would be touched
// at once) or failing at some allocation deep inside.
//
//   RAM            weights (mapped and converted) + KV cache + buffers  <= MemAvailable (/proc/meminfo)
//   address space  converted weights + KV cache + buffers + margin      <= RLIMIT_AS - VmSize
//                  (the file is mapped already: it is in VmSize)
//   data segment   converted weights + KV cache + buffers + margin      <= RLIMIT_DATA - VmData
//                  (private writable memory: heap, anonymous mappings, thread stacks)

#include <cstdint>
#include <optional>
#include <string>

#include "common/error.h"

namespace inferscope {

// What the system and this process allow now. nullopt: unknown or unlimited.
struct MemoryFigures {
    std::optional<uint64_t> available;          // MemAvailable
    std::optional<uint64_t> addressSpaceLimit;  // RLIMIT_AS (soft)
    uint64_t addressSpaceUsed = 0;              // VmSize
    std::optional<uint64_t> dataLimit;          // RLIMIT_DATA (soft)
    uint64_t dataUsed = 0;                      // VmData
};
MemoryFigures readMemoryFigures();

// What a load will hold (bytes).
struct MemoryNeed {
    uint64_t weightsMapped = 0;     // used in place from the file mapping: resident, but mapped already
    uint64_t weightsConverted = 0;  // copies made at load (Q8_0 -> F32, --compute bf16/int8, ...)
    uint64_t kvCache = 0;
    uint64_t buffers = 0;           // activations, RoPE table, attention scratch, conversion temporaries
    uint64_t newBytes() const { return weightsConverted + kvCache + buffers; }
    uint64_t residentBytes() const { return weightsMapped + newBytes(); }
};

// Room kept for what is not counted above (oneDNN's scratchpad and JIT code, OpenMP thread stacks).
inline constexpr uint64_t kMemoryMargin = uint64_t(64) << 20;

// The first limit the need exceeds, if any.
struct MemoryShortfall {
    std::string limit;   // "available memory (MemAvailable)", "the address-space limit (RLIMIT_AS)", ...
    uint64_t needed = 0;
    uint64_t allowed = 0;
};
std::optional<MemoryShortfall> findMemoryShortfall(const MemoryNeed& need, const MemoryFigures& have);

// "1.5 GiB", "640 KiB", "12 bytes"
std::string formatBytes(uint64_t bytes);

}  // namespace inferscope
