// EngineWorker's KV-cache requests (kv_jobs.h): a new cache type for the loaded model, and what
// another type costs on an answer.
#include "engine/engine_worker.h"

namespace inferscope {

std::vector<int32_t> tokenizeChunks(const Tokenizer& tokenizer, const std::vector<PromptChunk>& chunks, QList<QList<int>>* perChunk) {
    std::vector<int32_t> all;
    for (const PromptChunk& c : chunks) {
        std::vector<int32_t> ids = c.hasTokens ? c.tokens : tokenizer.encode(c.text, c.addBos, true);
        all.insert(all.end(), ids.begin(), ids.end());
        if (perChunk) perChunk->append(QList<int>(ids.begin(), ids.end()));
    }
    return all;
}

void EngineWorker::setKvType(quint64 requestId, KvType type) {
    if (shuttingDown()) return;
    if (!engine_) {
        emit kvTypeSet(requestId, {}, tr("No model is loaded."));
        return;
    }
    auto ok = engine_->setKvType(type);
    emit kvTypeSet(requestId, engine_->kvStats(), ok ? QString() : QString::fromStdString(ok.error().message));
}

void EngineWorker::measureKvCost(const KvCostJob& job) {
    if (shuttingDown()) return;
    if (!engine_) {
        emit kvCostFailed(job.id, tr("No model is loaded."));
        return;
    }
    KvCostResult result;
    std::vector<int32_t> sequence = tokenizeChunks(engine_->tokenizer(), job.chunks);
    result.promptTokens = int32_t(sequence.size());
    sequence.insert(sequence.end(), job.answer.begin(), job.answer.end());
    auto cancelled = [this, id = job.id] { return cancelThrough_->load(std::memory_order_relaxed) >= id; };
    auto cost = inferscope::measureKvCost(*engine_, sequence, result.promptTokens, job.reference, job.test, cancelled);
    if (!cost) {
        emit kvCostFailed(job.id, QString::fromStdString(cost.error().message));
        return;
    }
    result.cost = std::move(*cost);
    emit kvCostMeasured(job.id, result);
}

}  // namespace inferscope
