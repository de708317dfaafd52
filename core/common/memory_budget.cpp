#include "common/memory_budget.h"

#include <sys/resource.h>

#include <fmt/format.h>
#include <fstream>
#include <sstream>
#include <string_view>

namespace inferscope {
namespace {

// "Key:   1234 kB" lines of /proc/meminfo and /proc/self/status, in bytes.
std::optional<uint64_t> readKb(const char* path, std::string_view key) {
    std::ifstream in(path);
    for (std::string line; std::getline(in, line);) {
        if (line.size() <= key.size() || line.compare(0, key.size(), key) != 0 || line[key.size()] != ':') continue;
        std::istringstream rest(line.substr(key.size() + 1));
        uint64_t kb = 0;
        if (rest >> kb) return kb * 1024;
    }
    return std::nullopt;
}

std::optional<uint64_t> softLimit(int resource) {
    rlimit r{};
    if (getrlimit(resource, &r) != 0 || r.rlim_cur == RLIM_INFINITY) return std::nullopt;
    return uint64_t(r.rlim_cur);
}

}  // namespace

MemoryFigures readMemoryFigures() {
    MemoryFigures f;
    f.available = readKb("/proc/meminfo", "MemAvailable");
    f.addressSpaceLimit = softLimit(RLIMIT_AS);
    f.addressSpaceUsed = readKb("/proc/self/status", "VmSize").value_or(0);
    f.dataLimit = softLimit(RLIMIT_DATA);
    f.dataUsed = readKb("/proc/self/status", "VmData").value_or(0);
    return f;
}

std::optional<MemoryShortfall> findMemoryShortfall(const MemoryNeed& need, const MemoryFigures& have) {
    auto room = [](uint64_t limit, uint64_t used) { return limit > used ? limit - used : 0; };
    if (have.available && need.residentBytes() > *have.available)
        return MemoryShortfall{"available memory (MemAvailable)", need.residentBytes(), *have.available};
    const uint64_t fresh = need.newBytes() + kMemoryMargin;
    if (have.addressSpaceLimit && fresh > room(*have.addressSpaceLimit, have.addressSpaceUsed))
        return MemoryShortfall{"the address-space limit (RLIMIT_AS)", fresh, room(*have.addressSpaceLimit, have.addressSpaceUsed)};
    if (have.dataLimit && fresh > room(*have.dataLimit, have.dataUsed))
        return MemoryShortfall{"the data-segment limit (RLIMIT_DATA)", fresh, room(*have.dataLimit, have.dataUsed)};
    return std::nullopt;
}

std::string formatBytes(uint64_t bytes) {
    if (bytes < 1024) return fmt::format("{} bytes", bytes);
    const char* units[] = {"KiB", "MiB", "GiB", "TiB", "PiB"};
    double v = double(bytes) / 1024;
    int u = 0;
    while (v >= 1024 && u < 4) v /= 1024, ++u;
    return fmt::format("{:.{}f} {}", v, v < 10 ? 1 : 0, units[u]);
}

}  // namespace inferscope
