#pragma once
// Shared by the GGUF tests: parse an image, assert an exact error, a small valid model, a temp dir.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <fmt/format.h>
#include <filesystem>
#include <string>
#include <vector>

#include "gguf/gguf_file.h"
#include "tools/gguf_raw_builder.h"
#include "tools/gguf_writer.h"

namespace inferscope::testing_gguf {

inline Result<GgufFile> parseBytes(std::vector<uint8_t> bytes) {
    return GgufFile::parse(MappedFile::fromBytes(std::move(bytes)));
}

inline std::vector<uint8_t> imageOf(const GgufWriter& w) {
    auto bytes = w.toBytes();
    EXPECT_TRUE(bytes) << bytes.error().message;
    return bytes ? std::move(*bytes) : std::vector<uint8_t>{};
}

inline const char* kindName(ErrorKind kind) {
    switch (kind) {
        case ErrorKind::InvalidArgument: return "InvalidArgument";
        case ErrorKind::BadFile: return "BadFile";
        case ErrorKind::Unsupported: return "Unsupported";
        case ErrorKind::Io: return "Io";
        case ErrorKind::OutOfMemory: return "OutOfMemory";
        case ErrorKind::Device: return "Device";
        case ErrorKind::Cancelled: return "Cancelled";
        case ErrorKind::Denied: return "Denied";
    }
    return "?";
}

// EXPECT_TRUE(failsWith(image, ErrorKind::BadFile, "exact message")): the reader must refuse the
// image with exactly this kind and message.
inline ::testing::AssertionResult failsWith(std::vector<uint8_t> image, ErrorKind kind, const std::string& message) {
    auto f = parseBytes(std::move(image));
    if (f) return ::testing::AssertionFailure() << "parsed without error; expected: " << message;
    if (f.error().kind != kind || f.error().message != message)
        return ::testing::AssertionFailure() << "got " << kindName(f.error().kind) << " \"" << f.error().message
                                             << "\"\n     expected " << kindName(kind) << " \"" << message << "\"";
    return ::testing::AssertionSuccess();
}

// n bytes of a recognisable pattern (never all zero, so misplaced padding shows).
inline std::vector<uint8_t> patternBytes(size_t n, uint8_t seed) {
    std::vector<uint8_t> out(n);
    for (size_t k = 0; k < n; ++k) out[k] = uint8_t(seed + 7 * k + 1);
    return out;
}

// A small valid model: metadata of several types and three tensors of three types, with padding
// between tensors and the last tensor ending exactly at the end of the file (no trailing padding),
// so every proper prefix of its image is a truncated file.
//   token_embd.weight   Q8_0 [32, 2]  68 bytes at 0    (28 bytes of padding follow)
//   attn_norm.weight    F16  [8, 3]   48 bytes at 96   (16 bytes of padding follow)
//   output.weight       F32  [8, 4]  128 bytes at 160  (ends at 288, aligned)
inline GgufWriter smallModel(uint32_t version = 3) {
    GgufWriter w(version);
    const std::vector<std::string> tokens{"<unk>", "<s>", "</s>", "a"};
    const std::vector<float> scores{0.0f, -0.0f, -1.0f, -2.5f};
    w.add("general.architecture", GgufMetaValue::string("llama"));
    w.add("tokenizer.ggml.tokens", GgufMetaValue::stringArray(tokens));
    w.add("tokenizer.ggml.scores", GgufMetaValue::array(std::span<const float>(scores)));
    w.add("llama.block_count", GgufMetaValue::u32(1));
    w.add("llama.attention.layer_norm_rms_epsilon", GgufMetaValue::f32(1e-5f));
    w.add("tokenizer.ggml.add_bos_token", GgufMetaValue::boolean(true));
    w.addTensor("token_embd.weight", {32, 2}, GgmlType::Q8_0, patternBytes(68, 1));
    w.addTensor("attn_norm.weight", {8, 3}, GgmlType::F16, patternBytes(48, 2));
    w.addTensor("output.weight", {8, 4}, GgmlType::F32, patternBytes(128, 3));
    return w;
}

// A fresh directory under the system temp dir, removed with everything in it.
class TempDir {
public:
    TempDir() {
        static int counter = 0;
        path_ = std::filesystem::temp_directory_path() /
                ("inferscope-gguf-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
        std::filesystem::remove_all(path_);
        std::filesystem::create_directories(path_);
    }
    ~TempDir() {
        std::error_code ec;
        std::filesystem::remove_all(path_, ec);
    }
    const std::filesystem::path& path() const { return path_; }
    std::vector<std::string> entries() const {
        std::vector<std::string> names;
        for (const auto& e : std::filesystem::directory_iterator(path_)) names.push_back(e.path().filename());
        std::sort(names.begin(), names.end());
        return names;
    }

private:
    std::filesystem::path path_;
};

}  // namespace inferscope::testing_gguf
