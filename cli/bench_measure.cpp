#include "bench_measure.h"

#include "git_commit.h"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <thread>

namespace inferscope::cli {

CpuTimes CpuTimes::now() {
    CpuTimes t;
    std::ifstream stat("/proc/stat");
    std::string cpu;
    uint64_t v[10] = {};
    stat >> cpu;
    for (auto& x : v) stat >> x;
    for (int i = 0; i < 8; ++i) t.total += v[i];
    t.idle = v[3] + v[4];
    std::ifstream self("/proc/self/stat");
    std::string line;
    std::getline(self, line);
    std::istringstream rest(line.substr(line.rfind(')') + 2));
    std::string field;
    for (int i = 3; i <= 15 && rest >> field; ++i)
        if (i == 14 || i == 15) t.own += std::stoull(field);  // utime, stime
    return t;
}

double CpuTimes::othersSince(const CpuTimes& before) const {
    const double total = double(this->total - before.total);
    if (total <= 0) return 0.0;
    const double busy = total - double(idle - before.idle) - double(own - before.own);
    return std::clamp(busy / total, 0.0, 1.0);
}

void waitForQuiet(double maxBusy, double seconds) {
    const auto t0 = BenchClock::now();
    while (secondsSince(t0) < seconds) {
        const CpuTimes before = CpuTimes::now();
        std::this_thread::sleep_for(std::chrono::milliseconds(500));
        if (CpuTimes::now().othersSince(before) < maxBusy) return;
    }
}

uint64_t peakRssBytes() {
    std::ifstream in("/proc/self/status");
    for (std::string line; std::getline(in, line);)
        if (line.rfind("VmHWM:", 0) == 0) return std::stoull(line.substr(6)) * 1024;
    return 0;
}
void resetPeakRss() { std::ofstream("/proc/self/clear_refs") << "5"; }

std::string gitCommit() { return INFERSCOPE_GIT_COMMIT; }

std::vector<double> Stats::used() const {
    std::vector<double> out;
    for (size_t i = 0; i < samples.size(); ++i)
        if (i < clean.size() && clean[i]) out.push_back(samples[i]);
    return out.empty() ? samples : out;
}
double Stats::median() const {
    auto s = used();
    std::sort(s.begin(), s.end());
    if (s.empty()) return 0.0;
    return s.size() % 2 ? s[s.size() / 2] : (s[s.size() / 2 - 1] + s[s.size() / 2]) / 2;
}
double Stats::min() const {
    const auto s = used();
    return s.empty() ? 0.0 : *std::min_element(s.begin(), s.end());
}
double Stats::max() const {
    const auto s = used();
    return s.empty() ? 0.0 : *std::max_element(s.begin(), s.end());
}

}  // namespace inferscope::cli
