#pragma once
// The KV-cache requests that cross to the worker besides generation (engine_worker_kv.cpp):
// re-creating the cache in another type, and measuring what another type costs on an answer.

#include <QList>
#include <QMetaType>
#include <vector>

#include "engine/kv_cost.h"
#include "engine/prompt_builder.h"  // PromptChunk

namespace inferscope {

// "What q8_0 costs": an answer teacher-forced through a cache of each type (kv_cost.h).
struct KvCostJob {
    quint64 id = 0;
    std::vector<PromptChunk> chunks;  // the answer's prompt, as its generation sent it
    std::vector<int32_t> answer;      // the answer's tokens, one per step
    KvType reference = KvType::F32;
    KvType test = KvType::Q8_0;
};

// perToken[i] belongs to the answer's step i.
struct KvCostResult {
    KvCost cost;
    int32_t promptTokens = 0;
};

// A prompt's chunks as the model reads them: text chunks tokenized (with BOS when asked), token
// chunks as they are; perChunk (optional) receives each chunk's ids.
std::vector<int32_t> tokenizeChunks(const Tokenizer& tokenizer, const std::vector<PromptChunk>& chunks,
                                    QList<QList<int>>* perChunk = nullptr);

}  // namespace inferscope

Q_DECLARE_METATYPE(inferscope::KvCostJob)
Q_DECLARE_METATYPE(inferscope::KvCostResult)
Q_DECLARE_METATYPE(inferscope::KvType)
