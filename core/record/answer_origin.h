#pragma once
// Where an answer came from, kept with it so that it can be shown, exported and compared long
// after what produced it is gone: the model (its file, its name, a hash of its vocabulary), the
// backend (this machine's engine, or a server and the model asked of it), the device, the KV cache
// it ran with, whether its timings were measured by the engine or by a client over the network,
// and the text of every token its step records name — the picked tokens and every candidate — so
// no view has to look a stored id up in whatever vocabulary is loaded now. Plain values; the app
// stores them as JSON beside the answer (gui/store/answer_origin_json.h).

#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include "record/pass_cost_figures.h"
#include "record/structured_constraint.h"

namespace inferscope {

// A token's text: its bytes, or for a token that stands for no text (a control token such as
// "</s>", "<|im_end|>") the name the vocabulary gives it.
struct TokenText {
    std::string bytes;
    std::string label;  // set only when bytes is empty
    bool operator==(const TokenText&) const = default;
};

enum class AnswerBackend : uint8_t {
    Unknown,  // stored before answers kept their origin, and nothing in the answer says
    Local,    // this machine's engine ran a model file
    Remote,   // an OpenAI-compatible server answered: its timings are this client's, network included
};
// "unknown", "local", "remote" (as stored); any other name reads as Unknown.
constexpr std::string_view answerBackendName(AnswerBackend backend) {
    return backend == AnswerBackend::Local ? "local" : backend == AnswerBackend::Remote ? "remote" : "unknown";
}
constexpr AnswerBackend answerBackendFromName(std::string_view name) {
    return name == "local" ? AnswerBackend::Local : name == "remote" ? AnswerBackend::Remote : AnswerBackend::Unknown;
}

struct AnswerOrigin {
    AnswerBackend backend = AnswerBackend::Unknown;
    std::string modelFile;          // local: the GGUF file's path; remote: ""
    std::string modelName;          // local: the file's general.name; remote: the model id the server was asked for
    uint64_t vocabularyHash = 0;    // local: vocabularyHash() of its tokenizer; 0: not known
    int32_t vocabularySize = 0;     // local
    std::string serverUrl;          // remote: the server's base URL
    bool stagesReported = false;    // remote: the server recorded every sampler stage (Inferscope's extension), not raw only
    std::string device;             // local: "CPU avx512_core_bf16, 2 threads"; remote: "server <url>"
    std::string kvType;             // local: "f32", "q8_0", …; remote: "" (the server's own)
    uint64_t kvBytesPerToken = 0;   // local: the cache's bytes per position, at that type
    uint64_t kvBytesReserved = 0;   // local: what the cache held for the whole context
    int32_t contextLength = 0;      // local
    // local: what one pass of it read and computed (model/pass_cost.h's figures), for the Timeline's GB/s
    // and GFLOP/s of this answer whatever model is loaded later; 0s: not known.
    PassCostFigures cost;
    // What the text was asked to be (structured output): checked against it when shown.
    StructuredConstraint structured;
    std::map<int32_t, TokenText> tokens;  // every id the answer's records name, picked or candidate

    bool known() const { return backend != AnswerBackend::Unknown; }
    bool remote() const { return backend == AnswerBackend::Remote; }
    // "engine" (a local pass's own clock) or "client" (this app's clock, the network included).
    std::string_view timedBy() const { return remote() ? "client" : backend == AnswerBackend::Local ? "engine" : ""; }
    const TokenText* text(int32_t id) const {
        const auto it = tokens.find(id);
        return it == tokens.end() ? nullptr : &it->second;
    }
    // The same model: the same backend and name, and locally the same vocabulary (when both know
    // its hash) — an answer's ids mean the same tokens in it. Unknown origins match nothing.
    bool sameModel(const AnswerOrigin& other) const {
        if (!known() || backend != other.backend || modelName != other.modelName) return false;
        if (remote()) return serverUrl == other.serverUrl;
        return vocabularyHash == 0 || other.vocabularyHash == 0 || vocabularyHash == other.vocabularyHash;
    }

    bool operator==(const AnswerOrigin&) const = default;
};

// FNV-1a 64 over the vocabulary: for each id its bytes, a 0xFF separator, its label, 0xFE. Two
// files whose ids stand for the same texts hash alike; `textOf(id)` gives the TokenText of id.
template <typename TextOf>
uint64_t vocabularyHash(int32_t vocabSize, TextOf&& textOf) {
    uint64_t h = 0xcbf29ce484222325ULL;
    auto mix = [&h](std::string_view s) {
        for (const char c : s) h = (h ^ uint8_t(c)) * 0x100000001b3ULL;
    };
    for (int32_t id = 0; id < vocabSize; ++id) {
        const TokenText t = textOf(id);
        mix(t.bytes);
        mix("\xFF");
        mix(t.label);
        mix("\xFE");
    }
    return h;
}

}  // namespace inferscope
