// Writes the small seed inputs of the fuzz corpus into a directory (scripts/ci-fuzz.sh runs it
// before each fuzzing run, beside the real files of resources/ and tests/data/):
//   stories-header.gguf   stories260K's metadata and vocabulary, token_embd as Q8_0 zeros and no
//                         other tensor: every stage passes, in 45 KB instead of 1.2 MB
//   tiny-bytes.gguf       a 262-token vocabulary with all 256 byte tokens (byte fallback), a ChatML
//                         template and a control token, 1-layer hyperparameters
//   tiny-nobytes.gguf     6 tokens, no byte tokens (unknown-token path), GGUF v2
//   tiny-gemma3/gemma2.gguf  the newer architectures' keys (key_length, sliding window, soft-caps)
//   quant-blocks.gguf     one 2 × 256 tensor of each block type the model decodes, pseudo-random
//                         bytes (the decoders' input as the fuzzer mutates it)
//   hostile-*.gguf        one defect each: a string array claiming 2^32 items, 2^20 metadata
//                         entries claimed, a tensor past the end, absurd hyperparameters
// usage: make_seeds OUT_DIR STORIES_GGUF
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "gguf/gguf_file.h"
#include "tools/gguf_raw_builder.h"
#include "tools/gguf_writer.h"
#include "tiny_bpe_vocab.h"

using namespace inferscope;

namespace {

bool save(const std::string& path, const std::vector<uint8_t>& bytes) {
    std::ofstream out(path, std::ios::binary);
    out.write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
    return bool(out);
}

bool save(const std::string& path, const GgufWriter& w) {
    auto bytes = w.toBytes();
    if (!bytes) {
        std::fprintf(stderr, "make_seeds: %s: %s\n", path.c_str(), bytes.error().message.c_str());
        return false;
    }
    return save(path, *bytes);
}

// A 1-layer llama header: embedding 8, 2 heads, feed-forward 8, context 16; token_embd [8, nVocab] F32.
void tinyModel(GgufWriter& w, size_t nVocab, bool sentencePiece = true) {
    w.add("general.architecture", GgufMetaValue::string("llama"));
    w.add("llama.context_length", GgufMetaValue::u32(16));
    w.add("llama.embedding_length", GgufMetaValue::u32(8));
    w.add("llama.block_count", GgufMetaValue::u32(1));
    w.add("llama.feed_forward_length", GgufMetaValue::u32(8));
    w.add("llama.attention.head_count", GgufMetaValue::u32(2));
    w.add("llama.attention.head_count_kv", GgufMetaValue::u32(1));
    w.add("llama.attention.layer_norm_rms_epsilon", GgufMetaValue::f32(1e-5f));
    if (sentencePiece) w.add("tokenizer.ggml.model", GgufMetaValue::string("llama"));
    w.addTensor("token_embd.weight", {8, nVocab}, GgmlType::F32, std::vector<uint8_t>(8 * nVocab * 4, 0));
}

void vocabulary(GgufWriter& w, const std::vector<std::string>& tokens, const std::vector<int32_t>& types) {
    std::vector<float> scores(tokens.size());
    for (size_t i = 0; i < scores.size(); ++i) scores[i] = -float(i);
    w.add("tokenizer.ggml.tokens", GgufMetaValue::stringArray(std::span<const std::string>(tokens)));
    w.add("tokenizer.ggml.scores", GgufMetaValue::array(std::span<const float>(scores)));
    w.add("tokenizer.ggml.token_type", GgufMetaValue::array(std::span<const int32_t>(types)));
    w.add("tokenizer.ggml.unknown_token_id", GgufMetaValue::u32(0));
    w.add("tokenizer.ggml.bos_token_id", GgufMetaValue::u32(1));
    w.add("tokenizer.ggml.eos_token_id", GgufMetaValue::u32(2));
}

}  // namespace

int main(int argc, char** argv) {
    if (argc != 3) {
        std::fprintf(stderr, "usage: make_seeds OUT_DIR STORIES_GGUF\n");
        return 1;
    }
    const std::string dir = argv[1];
    bool ok = true;

    // stories260K without its weights but token_embd.
    auto stories = GgufFile::open(argv[2]);
    if (!stories) {
        std::fprintf(stderr, "make_seeds: %s\n", stories.error().message.c_str());
        return 1;
    }
    {
        GgufWriter w;
        for (const auto& kv : stories->metadata()) w.add(std::string(kv.key), GgufMetaValue::copyOf(kv.value));
        w.addTensor("token_embd.weight", {64, 512}, GgmlType::Q8_0, std::vector<uint8_t>(64 / 32 * 34 * 512, 0));
        ok &= save(dir + "/stories-header.gguf", w);
    }

    {
        GgufWriter w;
        uint32_t state = 12345;
        for (GgmlType type : {GgmlType::Q4_0, GgmlType::Q4_1, GgmlType::Q5_0, GgmlType::Q5_1, GgmlType::Q8_0, GgmlType::Q2_K,
                              GgmlType::Q3_K, GgmlType::Q4_K, GgmlType::Q5_K, GgmlType::Q6_K, GgmlType::IQ4_NL, GgmlType::IQ4_XS}) {
            const auto info = *ggmlTypeInfo(uint32_t(type));
            std::vector<uint8_t> bytes(2 * 256 / info.blockSize * info.typeSize);
            for (auto& b : bytes) b = uint8_t((state = state * 1664525u + 1013904223u) >> 24);
            w.addTensor(std::string("blk.0.") + std::string(info.name), {256, 2}, type, bytes);
        }
        ok &= save(dir + "/quant-blocks.gguf", w);
    }

    // Byte fallback: <unk> <s> </s>, the 256 byte tokens, then a few pieces and a control token.
    {
        std::vector<std::string> tokens = {"<unk>", "<s>", "</s>"};
        std::vector<int32_t> types = {2, 3, 3};
        for (int b = 0; b < 256; ++b) {
            char name[8];
            std::snprintf(name, sizeof name, "<0x%02X>", b);
            tokens.push_back(name);
            types.push_back(6);
        }
        for (const char* p : {"\xE2\x96\x81", "\xE2\x96\x81" "a", "<|im_start|>"}) tokens.push_back(p);
        types.insert(types.end(), {1, 1, 3});
        GgufWriter w;
        tinyModel(w, tokens.size());
        vocabulary(w, tokens, types);
        w.add("tokenizer.chat_template", GgufMetaValue::string("{% for m in messages %}<|im_start|>{{ m.role }}{% endfor %}"));
        ok &= save(dir + "/tiny-bytes.gguf", w);
    }

    // No byte tokens: text outside the vocabulary becomes <unk>. GGUF v2.
    const std::vector<std::string> tiny = {"<unk>", "<s>", "</s>", "\xE2\x96\x81", "a", "b"};
    {
        GgufWriter w;
        w.header().version = 2;
        tinyModel(w, tiny.size());
        vocabulary(w, tiny, {2, 3, 3, 1, 1, 1});
        ok &= save(dir + "/tiny-nobytes.gguf", w);
    }

    // Byte-level BPE (tokenizer.ggml.model = gpt2), one per pre-tokenizer, and Llama 3's
    // chat template: merges, pre-tokenizer regexes, special tokens and EOG by text to mutate.
    for (const char* pre : {"llama-bpe", "qwen2", "gpt-2", ""}) {
        GgufWriter w;
        tinyModel(w, tiny_bpe::kCount, false);
        tiny_bpe::addVocabulary(w, pre);
        w.add("tokenizer.chat_template", GgufMetaValue::string("{{ '<|start_header_id|>' + message['role'] + '<|end_header_id|>' }}"));
        ok &= save(dir + "/tiny-bpe-" + (*pre ? pre : "default") + ".gguf", w);
    }

    // The newer architectures' keys: a 1-layer gemma3 header (head_dim from key_length ≠
    // embedding / heads, sliding window, linear RoPE scaling) and a gemma2 one with soft-caps.
    for (const char* arch : {"gemma3", "gemma2"}) {
        GgufWriter w;
        const std::string a = arch;
        w.add("general.architecture", GgufMetaValue::string(a));
        for (auto [key, value] : {std::pair{"context_length", 16u}, {"embedding_length", 8u}, {"block_count", 1u},
                                  {"feed_forward_length", 8u}, {"attention.head_count", 2u}, {"attention.head_count_kv", 1u},
                                  {"attention.key_length", 16u}, {"attention.value_length", 16u}, {"attention.sliding_window", 4u}})
            w.add(a + "." + key, GgufMetaValue::u32(value));
        w.add(a + ".attention.layer_norm_rms_epsilon", GgufMetaValue::f32(1e-6f));
        if (a == "gemma3") {
            w.add(a + ".rope.freq_base", GgufMetaValue::f32(1e6f));
            w.add(a + ".rope.scaling.type", GgufMetaValue::string("linear"));
            w.add(a + ".rope.scaling.factor", GgufMetaValue::f32(8.0f));
        } else {
            w.add(a + ".attn_logit_softcapping", GgufMetaValue::f32(50.0f));
            w.add(a + ".final_logit_softcapping", GgufMetaValue::f32(30.0f));
        }
        w.add("tokenizer.ggml.model", GgufMetaValue::string("llama"));
        vocabulary(w, tiny, {2, 3, 3, 1, 1, 1});
        w.addTensor("token_embd.weight", {8, tiny.size()}, GgmlType::F32, std::vector<uint8_t>(8 * tiny.size() * 4, 0));
        ok &= save(dir + "/tiny-" + a + ".gguf", w);
    }

    // ---- one defect each ----
    {
        GgufRawBuilder b;  // a string array that claims 2^32 items and holds two
        b.header(3, 0, 1).key("tokenizer.ggml.tokens", GgufType::Array).array(GgufType::String, uint64_t(1) << 32);
        b.str("a").str("b");
        ok &= save(dir + "/hostile-array-count.gguf", b.data());
    }
    {
        GgufRawBuilder b;  // 2^20 entries claimed, one present
        b.header(3, 0, uint64_t(1) << 20).key("general.name", GgufType::String).str("x");
        ok &= save(dir + "/hostile-kv-count.gguf", b.data());
    }
    {
        GgufRawBuilder b;  // a tensor whose data would end far past the file
        b.header(3, 1, 1).key("general.alignment", GgufType::U32).u32(32);
        b.tensorInfo("token_embd.weight", {8, 1u << 20}, uint32_t(GgmlType::F32), 0).padTo(32).zeros(64);
        ok &= save(dir + "/hostile-tensor-past-end.gguf", b.data());
    }
    {
        GgufWriter w;  // hyperparameters at and past their limits
        tinyModel(w, tiny.size());
        vocabulary(w, tiny, {2, 3, 3, 1, 1, 1});
        w.add("llama.rope.dimension_count", GgufMetaValue::u32(3));
        w.add("llama.rope.freq_base", GgufMetaValue::f64(1e300));
        w.add("llama.rope.scaling.type", GgufMetaValue::string("yarn\x1b[31m"));
        ok &= save(dir + "/hostile-hparams.gguf", w);
    }
    return ok ? 0 : 1;
}
