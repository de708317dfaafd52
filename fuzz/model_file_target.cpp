#include "model_file_target.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "engine/chat_template.h"
#include "gguf/gguf_file.h"
#include "heap_meter.h"
#include "model/model_info.h"
#include "tokenizer/tokenizer.h"

namespace inferscope::fuzz {
namespace {

[[noreturn]] void broken(const std::string& what) {
    std::fprintf(stderr, "fuzz_model_file: property broken: %s\n", what.c_str());
    std::fflush(stderr);
    std::abort();
}

void require(bool ok, const char* what) {
    if (!ok) broken(what);
}

// An error message shown to a user (one line on a terminal, a JSON string, a label): not empty,
// valid UTF-8, and no control characters (C0 including newline, DEL, C1) that could drive a
// terminal or split the line.
bool printable(std::string_view s) {
    if (s.empty()) return false;
    for (size_t i = 0; i < s.size();) {
        const auto c = uint8_t(s[i]);
        if (c < 0x80) {
            if (c < 0x20 || c == 0x7f) return false;
            ++i;
            continue;
        }
        const size_t len = (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xe ? 3 : (c >> 3) == 0x1e ? 4 : 0;
        if (len == 0 || i + len > s.size()) return false;
        uint32_t cp = c & (0x7fu >> len);
        for (size_t k = 1; k < len; ++k) {
            if ((uint8_t(s[i + k]) & 0xc0) != 0x80) return false;
            cp = cp << 6 | (uint8_t(s[i + k]) & 0x3f);
        }
        constexpr uint32_t kMin[] = {0, 0, 0x80, 0x800, 0x10000};
        if (cp < kMin[len] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff) || (cp >= 0x80 && cp <= 0x9f)) return false;
        i += len;
    }
    return true;
}

void checkError(const Error& e, const char* where) {
    if (!printable(e.message)) broken(std::string(where) + ": error message is empty or not printable: \"" + e.message + "\"");
}

// The first and last row of a tensor the model would compute with, through the decoders (ASan
// checks each reads its row's bytes only). Rows longer than 64k elements are cut to whole blocks.
void decodeEdgeRows(const GgufTensorInfo& t, std::span<const uint8_t> data) {
    if (!isSupportedWeightType(t.type()) || t.nElements == 0) return;
    const auto info = *ggmlTypeInfo(t.typeId);
    const uint64_t rowBytes = t.ne[0] / info.blockSize * info.typeSize;
    const uint64_t rows = t.nElements / t.ne[0];
    const uint64_t n = std::min<uint64_t>(t.ne[0], 65536 / info.blockSize * info.blockSize);
    static std::vector<float> out;
    out.resize(size_t(n));
    for (uint64_t r : {uint64_t(0), rows - 1}) {
        const uint8_t* row = data.data() + r * rowBytes;
        require(r * rowBytes + n / info.blockSize * info.typeSize <= data.size(), "a row lies inside its tensor");
        dequantizeRow(t.type(), row, out.data(), size_t(n));
    }
}

// Every accessor on every key and tensor of a file the reader accepted.
void exerciseFile(const GgufFile& file, std::span<const uint8_t> bytes) {
    for (const GgufKv& kv : file.metadata()) {
        require(file.find(kv.key) == &kv.value, "find() returns the key's own value");
        if (auto r = file.getUint(kv.key); !r) checkError(r.error(), "getUint");
        if (auto r = file.getFloat(kv.key); !r) checkError(r.error(), "getFloat");
        if (auto r = file.getString(kv.key); !r) checkError(r.error(), "getString");
        if (auto r = file.getBool(kv.key); !r) checkError(r.error(), "getBool");
        const GgufValue& v = kv.value;
        if (v.type != GgufType::Array || v.count == 0) continue;
        if (v.elemType == GgufType::String) {
            require(v.strings.size() == v.count, "a string array indexes every item");
            volatile char sink = 0;
            for (std::string_view s : {v.strings.front(), v.strings.back()})
                if (!s.empty()) sink = char(sink + s.front() + s.back());
        } else if (v.elemType != GgufType::Array) {
            (void)v.numberAt(0);
            (void)v.numberAt(v.count - 1);
            (void)v.intAt(v.count - 1);
        }
    }
    const uint8_t* begin = bytes.data();
    const uint8_t* end = begin + bytes.size();
    for (const GgufTensorInfo& t : file.tensors()) {
        require(file.findTensor(t.name) == &t, "findTensor() returns the tensor's own info");
        const auto expected = ggmlTensorBytes(t.typeId, std::span<const uint64_t>(t.ne.data(), t.nDims));
        require(expected && *expected == t.nBytes, "a tensor's byte size follows from its type and shape");
        const auto data = file.tensorData(t);
        require(data.size() == t.nBytes, "tensorData() spans the tensor's bytes");
        require(data.data() >= begin && data.data() <= end && uint64_t(end - data.data()) >= data.size(),
                "tensorData() lies inside the file");
        if (!data.empty()) {  // ASan: both ends are inside the input's buffer
            volatile uint8_t sink = uint8_t(data.front() + data.back());
            (void)sink;
        }
        require(!t.shapeString().empty(), "shapeString()");
        decodeEdgeRows(t, data);
    }
}

void exerciseModel(const GgufFile& file) {
    auto info = describeModel(file, "fuzz");
    if (!info) {
        checkError(info.error(), "describeModel");
        return;
    }
    const LlamaHParams& hp = info->hparams;
    require(hp.nHead > 0 && hp.nHeadKv > 0 && hp.nHead % hp.nHeadKv == 0, "heads divide");
    // head_dim is key_length when given (Qwen 3, Gemma), else embedding / heads
    require(hp.headDim > 0 && (hp.headDim * hp.nHead == hp.nEmbd || file.find(hp.architecture + ".attention.key_length")),
            "head dim = key length or embedding / heads");
    require(hp.slidingWindow >= 0 && hp.attnSoftCap >= 0 && hp.finalSoftCap >= 0, "window and soft-caps not negative");
    require(hp.ropeFreqBaseSliding > 1 && hp.ropeFreqScaleSliding > 0, "sliding layers' RoPE");
    require(hp.nRot >= 2 && hp.nRot <= hp.headDim && hp.nRot % 2 == 0, "RoPE dimensions");
    require(hp.nVocab > 0 && hp.nCtxTrain > 0 && hp.nLayer > 0 && hp.nFf > 0, "positive sizes");
    require(info->kvBytesPerTokenF32 == 2 * info->kvBytesPerTokenF16, "KV bytes per token");
    (void)detectChatTemplate(info->chatTemplate);
}

void exerciseTokenizer(const GgufFile& file, std::span<const uint8_t> bytes) {
    auto tok = Tokenizer::fromGguf(file);
    if (!tok) {
        checkError(tok.error(), "Tokenizer::fromGguf");
        return;
    }
    const Tokenizer& t = **tok;
    const int32_t n = t.vocabSize();
    require(n > 0, "a built tokenizer has tokens");
    for (int32_t id : {t.bosId(), t.eosId(), t.unkId(), t.padId(), t.eotId(), t.eomId()})
        require(id >= -1 && id < n, "special ids are -1 or in the vocabulary");
    const auto eog = t.endOfGenerationIds();
    require(std::is_sorted(eog.begin(), eog.end()) && std::adjacent_find(eog.begin(), eog.end()) == eog.end(),
            "the end-of-generation set is sorted, without duplicates");
    for (int32_t id : eog) require(id >= 0 && id < n && t.isEndOfGeneration(id), "end-of-generation ids are in the vocabulary");
    for (int32_t id : {t.eosId(), t.eotId(), t.eomId()})
        require(id < 0 || t.isEndOfGeneration(id), "EOS, EOT and EOM end generation");
    require(t.familyName() == (t.family() == TokenizerFamily::BytePair ? "bpe" : "sentencepiece"), "family name");
    // Text chosen to reach every path: ASCII, multi-byte UTF-8, invalid bytes, control pieces,
    // runs of spaces, a chat turn; then the input's own last bytes (what the fuzzer mutates freely).
    const std::string tail(reinterpret_cast<const char*>(bytes.data() + bytes.size() - std::min<size_t>(bytes.size(), 64)),
                           std::min<size_t>(bytes.size(), 64));
    const std::string chat = ChatTemplate{ChatTemplateKind::ChatML}.userTurn("Hi", "Be brief", true);
    // BPE's pre-tokenizers: contractions in both cases, digit runs, whitespace runs before text and
    // newlines, a surrogate, an overlong form and a code point above U+10FFFF (llama.cpp aborts there).
    const std::string bpeText = "I'M don't 1234567 \xC2\xBD\xE2\x85\xAB   x \r\n\n\t \xED\xA0\x80\xC0\xAF\xF4\x90\x80\x80<think>";
    for (const std::string& text : {std::string("Once upon a time, 🦙  \xff\xc0 <s>[INST]</s> <unk>\t\n"), chat, bpeText, tail}) {
        for (bool special : {false, true}) {
            const std::vector<int32_t> ids = t.encode(text, true, special, special);
            Utf8Stream stream;
            for (int32_t id : ids) {
                require(id >= 0 && id < n, "encode() gives ids of the vocabulary");
                (void)stream.push(t.tokenBytes(id));
                (void)t.piece(id);
            }
            (void)stream.flush();
            (void)t.decode(ids);
        }
    }
    (void)t.findSpecial("<|im_end|>");
    (void)t.decode(std::vector<int32_t>{-1, 0, n - 1, n});
}

}  // namespace

void runModelFile(std::span<const uint8_t> bytes) {
    std::vector<uint8_t> copy(bytes.begin(), bytes.end());  // exactly the input: ASan sees a read past it
    heapMeterStart();
    auto file = GgufFile::parse(MappedFile::fromBytes(std::move(copy)));
    const uint64_t peak = heapMeterPeak();
    if (heapMeterWorks() && peak > readerHeapBound(bytes.size()))
        broken("the GGUF reader held " + std::to_string(peak) + " heap bytes for a file of " + std::to_string(bytes.size()) +
               " (bound " + std::to_string(readerHeapBound(bytes.size())) + ")");
    if (!file) {
        checkError(file.error(), "GgufFile::parse");
        return;
    }
    exerciseFile(*file, file->mapping().bytes());  // the file owns the copy now
    exerciseModel(*file);
    exerciseTokenizer(*file, bytes);
}

}  // namespace inferscope::fuzz
