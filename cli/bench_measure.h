#pragma once
// What every `inferscope-cli bench` test measures with: the machine's busy share (a round is clean
// when other processes stayed under --max-busy), waiting for a quiet machine, the process's peak
// RSS, the commit built from, and medians with min–max over the clean rounds.
#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace inferscope::cli {

using BenchClock = std::chrono::steady_clock;
inline double secondsSince(BenchClock::time_point t0) { return std::chrono::duration<double>(BenchClock::now() - t0).count(); }

// CPU time of the whole machine and of this process, in clock ticks (/proc/stat, /proc/self/stat):
// what other processes took during a round is (busy - ours) / total.
struct CpuTimes {
    uint64_t total = 0, idle = 0, own = 0;
    static CpuTimes now();
    // Share of all CPUs other processes used since `before` (0..1).
    double othersSince(const CpuTimes& before) const;
};

// Waits (at most `seconds`) until other processes use < maxBusy of the CPUs over a 1 s window.
void waitForQuiet(double maxBusy, double seconds);

// Peak resident set (VmHWM) in bytes, and resetting it (Linux: "5" to clear_refs).
uint64_t peakRssBytes();
void resetPeakRss();

// `git describe --always --dirty` of the source tree when this binary was built (cli/git_commit.cmake),
// or "unknown".
std::string gitCommit();

struct Stats {
    std::vector<double> samples;
    std::vector<bool> clean;  // per sample: no other process was busy during its round
    // Over the clean rounds when there is one (a busy neighbour halves OpenMP throughput on two
    // cores), else over all.
    std::vector<double> used() const;
    double median() const;
    double min() const;
    double max() const;
    nlohmann::ordered_json json() const { return {{"median", median()}, {"min", min()}, {"max", max()}, {"samples", samples}}; }
};

}  // namespace inferscope::cli
