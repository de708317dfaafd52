#pragma once
// Shared by the engine and CLI tests: the golden reference files, model variants written from
// stories260K (every matrix converted to F16, BF16 or Q8_0, or one tensor altered), temp dirs.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "gguf/gguf_file.h"
#include "tools/gguf_writer.h"

namespace inferscope::testing_model {

inline const std::string kStories = std::string(INFERSCOPE_RESOURCES_DIR) + "/models/stories260K.gguf";
inline const std::string kTinyRandom = std::string(INFERSCOPE_TEST_DATA_DIR) + "/llama-2-tiny-random.gguf";

struct RefCandidate {
    int32_t id;
    float logit;
    float p;
};
struct RefStep {
    int32_t id;
    std::string piece;
    std::vector<RefCandidate> top;
};
struct Reference {
    std::string prompt;
    std::vector<int32_t> promptIds;
    std::vector<RefStep> steps;
    std::string text;
};

// llama.cpp's greedy output in the reference JSON layout (prompt, prompt_ids, steps with top-5, text).
inline Reference loadReferenceFile(const std::string& path) {
    std::ifstream in(path);
    const auto j = nlohmann::json::parse(in);
    Reference r;
    r.prompt = j["prompt"];
    r.promptIds = j["prompt_ids"].get<std::vector<int32_t>>();
    for (const auto& s : j["steps"]) {
        RefStep step{s["id"], s["piece"], {}};
        for (const auto& c : s["top"]) step.top.push_back({c["id"], c["logit"], c["p"]});
        r.steps.push_back(std::move(step));
    }
    r.text = j["text"];
    return r;
}

// A golden file of tests/data (see tests/data/README.md).
inline Reference loadReference(const std::string& name) {
    return loadReferenceFile(std::string(INFERSCOPE_TEST_DATA_DIR) + "/" + name);
}

// The agreement the reference README states for a correct F32 engine: |Δ| <= 5e-3 × max(1, |logit|).
inline float logitTolerance(float logit) { return 5e-3f * std::max(1.0f, std::fabs(logit)); }

class TempDir {
public:
    TempDir() {
        static int counter = 0;
        path_ = std::filesystem::temp_directory_path() /
                ("inferscope-test-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
        std::filesystem::remove_all(path_);
        std::filesystem::create_directories(path_);
    }
    ~TempDir() {
        std::error_code ec;
        std::filesystem::remove_all(path_, ec);
    }
    std::filesystem::path operator/(const std::string& name) const { return path_ / name; }

private:
    std::filesystem::path path_;
};

// Called per tensor of the source file: may change the name, the shape, the type or the bytes.
struct TensorEdit {
    std::string name;
    std::vector<uint64_t> ne;
    GgmlType type;
    std::vector<uint8_t> bytes;
    bool drop = false;
};

// Rewrites a GGUF file tensor by tensor through `edit` (metadata copied unchanged).
inline void rewriteModel(const std::string& src, const std::filesystem::path& dst, const std::function<void(TensorEdit&)>& edit) {
    auto f = GgufFile::open(src);
    ASSERT_TRUE(f) << f.error().message;
    GgufWriter w;
    for (const auto& kv : f->metadata()) w.add(std::string(kv.key), GgufMetaValue::copyOf(kv.value));
    for (const auto& t : f->tensors()) {
        auto data = f->tensorData(t);
        TensorEdit e{std::string(t.name), std::vector<uint64_t>(t.ne.begin(), t.ne.begin() + t.nDims), t.type(),
                     std::vector<uint8_t>(data.begin(), data.end())};
        edit(e);
        if (!e.drop) w.addTensor(e.name, e.ne, e.type, e.bytes);
    }
    auto ok = w.writeFile(dst);
    ASSERT_TRUE(ok) << ok.error().message;
}

// Every 2-D F32 matrix converted to `type` (F16, BF16 or Q8_0); norms stay F32, and so do
// matrices whose rows are not a whole number of Q8_0 blocks (stories260K's ffn_down, 172 wide).
inline void writeConverted(const std::string& src, const std::filesystem::path& dst, GgmlType type) {
    rewriteModel(src, dst, [type](TensorEdit& e) {
        if (e.ne.size() != 2 || e.type != GgmlType::F32) return;
        if (type == GgmlType::Q8_0 && e.ne[0] % 32 != 0) return;
        const size_t n = e.bytes.size() / 4;
        std::vector<float> x(n);
        std::memcpy(x.data(), e.bytes.data(), e.bytes.size());
        if (type == GgmlType::Q8_0) {
            e.bytes.assign(n / 32 * 34, 0);
            quantizeRowQ8_0(x.data(), e.bytes.data(), n);
        } else {
            std::vector<uint16_t> h(n);
            if (type == GgmlType::F16) fp32ToFp16Row(x.data(), h.data(), n);
            else fp32ToBf16Row(x.data(), h.data(), n);
            e.bytes.assign(reinterpret_cast<const uint8_t*>(h.data()), reinterpret_cast<const uint8_t*>(h.data()) + n * 2);
        }
        e.type = type;
    });
}

}  // namespace inferscope::testing_model
