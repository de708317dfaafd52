#pragma once
// Shared by the engine tests: loading an engine on the CPU with two threads and a few options,
// and a greedy request.
#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <memory>
#include <vector>

#include "engine/engine.h"
#include "model_test_helpers.h"

namespace inferscope::testing_model {

struct TestLoad {
    int32_t ctx = 0;     // 0: the model's trained length
    int32_t batch = 512;
    ComputePrecision precision = ComputePrecision::Auto;
    KvType kv = KvType::F32;
    bool privateWeights = false;  // EngineOptions::privateWeights (--no-mmap)
};

inline Result<std::unique_ptr<Engine>> tryLoadEngine(const std::filesystem::path& path, const TestLoad& load = {}) {
    EngineOptions opt;
    opt.modelPath = path;
    opt.device = DeviceKind::Cpu;
    opt.threads = 2;
    opt.contextLength = load.ctx;
    opt.batchSize = load.batch;
    opt.precision = load.precision;
    opt.kvType = load.kv;
    opt.privateWeights = load.privateWeights;
    return Engine::load(opt);
}

// The engine, or null with a test failure naming the load's error.
inline std::unique_ptr<Engine> loadTestEngine(const std::filesystem::path& path, const TestLoad& load = {}) {
    auto e = tryLoadEngine(path, load);
    EXPECT_TRUE(e) << e.error().message;
    return e ? std::move(*e) : nullptr;
}

// A model and a copy of it with every matrix in Q8_0, both loaded: a drafter, a second model to
// compare with. The copy's file lives as long as this does.
struct ModelWithQ8Copy {
    TempDir dir;
    std::unique_ptr<Engine> model, copy;
};
inline std::unique_ptr<ModelWithQ8Copy> loadWithQ8Copy(const std::string& path, const TestLoad& load = {}) {
    auto pair = std::make_unique<ModelWithQ8Copy>();
    const auto q8 = pair->dir / "copy-q8_0.gguf";
    writeConverted(path, q8, GgmlType::Q8_0);
    pair->model = loadTestEngine(path, load);
    pair->copy = loadTestEngine(q8, load);
    return pair;
}

// Greedy decoding of maxTokens tokens, recording the top topN candidates of each step.
inline GenerateRequest greedyRequest(std::vector<int32_t> prompt, int32_t maxTokens, int32_t topN = 5) {
    GenerateRequest req;
    req.prompt = std::move(prompt);
    req.sampler.temperature = 0.0f;
    req.sampler.topN = topN;
    req.maxTokens = maxTokens;
    return req;
}

}  // namespace inferscope::testing_model
