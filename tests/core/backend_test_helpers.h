#pragma once
// Shared by the backend tests: seeded random data, a two-thread CPU device, the relative error
// the matmul tests bound.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <random>
#include <vector>

#include "backend/compute_device.h"

namespace inferscope::testing_backend {

inline std::vector<float> randomVector(size_t n, uint32_t seed, float scale = 1.0f) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> dist(0.0f, scale);
    std::vector<float> v(n);
    for (auto& x : v) x = dist(rng);
    return v;
}

inline std::unique_ptr<ComputeDevice> cpu() {
    auto dev = ComputeDevice::create(DeviceKind::Cpu, 2);
    EXPECT_TRUE(dev) << dev.error().message;
    (*dev)->bindThreads();
    return std::move(*dev);
}

// Max |a - b| / max(1, |b|).
inline float maxRelError(const std::vector<float>& a, const std::vector<float>& b) {
    float worst = 0;
    for (size_t i = 0; i < a.size(); ++i) worst = std::max(worst, std::fabs(a[i] - b[i]) / std::max(1.0f, std::fabs(b[i])));
    return worst;
}

}  // namespace inferscope::testing_backend
