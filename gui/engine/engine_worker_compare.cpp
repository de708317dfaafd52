// EngineWorker's comparison of two models on one answer (compare_jobs.h): the second model (B) is
// loaded here, beside the conversation's engine (A), and kept for the next comparison while its
// file is unchanged; both read the answer's tokens through core's compareTeacherForced. The
// conversation's engine stays loaded; its cache then holds the compared tokens (the next answer
// reuses what it shares with them).
#include <QElapsedTimer>
#include <filesystem>

#include "engine/engine_worker.h"
#include "engine/local_backend.h"

namespace inferscope {
namespace {

// What tells a file apart from the one loaded before under the same path.
std::string fileStamp(const std::string& path) {
    std::error_code ec;
    const auto size = std::filesystem::file_size(path, ec);
    if (ec) return {};
    const auto time = std::filesystem::last_write_time(path, ec);
    if (ec) return {};
    return std::to_string(size) + ":" + std::to_string(time.time_since_epoch().count());
}

}  // namespace

AnswerOrigin localAnswerOrigin(const LoadedModel& model, const KvCacheStats& kv) {
    AnswerOrigin o;
    o.backend = AnswerBackend::Local;
    o.modelName = model.info.name;
    o.device = model.device;
    o.modelFile = model.path;
    o.vocabularyHash = model.vocabularyHash;
    o.vocabularySize = model.tokenizer ? model.tokenizer->vocabSize() : 0;
    o.kvType = std::string(kvTypeName(kv.layout.type));
    o.kvBytesPerToken = kv.bytesPerToken;
    o.kvBytesReserved = kv.bytesReserved;
    o.contextLength = model.contextLength;
    o.cost = model.cost.figures();
    return o;
}

void EngineWorker::compareModels(const CompareJob& job) {
    if (shuttingDown()) return;
    if (!engine_) {
        emit compareFailed(job.id, tr("No model is loaded."));
        return;
    }
    auto cancelled = [this, id = job.id] { return cancelThrough_->load(std::memory_order_relaxed) >= id; };
    CompareResult result;
    result.modelB = job.modelB;
    QElapsedTimer clock;
    clock.start();
    if (QString error = ensureModelB(job.modelB, &result.loadMs); !error.isEmpty()) {
        emit compareFailed(job.id, error);
        return;
    }
    auto failed = [&](const Error& error, const QString& message) {
        emit compareFailed(job.id, error.kind == ErrorKind::Cancelled ? QStringLiteral("cancelled") : message);
    };
    if (cancelled()) {
        emit compareFailed(job.id, QStringLiteral("cancelled"));
        return;
    }
    clock.restart();
    if (auto same = checkSameVocabulary(engine_->tokenizer(), engineB_->tokenizer()); !same) {
        // Compared on the text instead: both read the same bytes with their own tokenizers.
        result.why = same.error().message;
        if (job.answer.empty() && job.answerText.empty()) {
            emit compareFailed(job.id, tr("Nothing to compare: the answer is empty."));
            return;
        }
        result.answerText = job.answerText.empty() ? engine_->tokenizer().decode(job.answer) : job.answerText;
        auto text = compareOnText(*engine_, *engineB_, job.contextText, result.answerText, cancelled);
        if (!text) {
            failed(text.error(), tr("The vocabularies differ (%1), and the answer could not be compared on its text: %2")
                                     .arg(QString::fromStdString(same.error().message), QString::fromStdString(text.error().message)));
            return;
        }
        result.text = std::move(*text);
    } else {
        std::vector<int32_t> sequence = tokenizeChunks(engine_->tokenizer(), job.chunks);
        result.promptTokens = int32_t(sequence.size());
        sequence.insert(sequence.end(), job.answer.begin(), job.answer.end());
        result.perToken.reserve(job.answer.size());
        auto ok = compareTeacherForced(*engine_, *engineB_, sequence, result.promptTokens,
                                       [&](const TokenComparison& t) { result.perToken.push_back(t); }, result.divergence,
                                       result.perplexityA, result.perplexityB, cancelled, CompareDetail{kCompareCandidates, job.sampler});
        if (!ok) {
            failed(ok.error(), QString::fromStdString(ok.error().message));
            return;
        }
    }
    result.compareMs = double(clock.nsecsElapsed()) / 1e6;
    result.originB = localAnswerOrigin(describeLoaded(*engineB_, modelPathB_), engineB_->kvStats());
    emit compareFinished(job.id, result);
}

QString EngineWorker::ensureModelB(const std::string& path, double* loadMs) {
    const std::string stamp = fileStamp(path);
    if (engineB_ && modelPathB_ == path && stampB_ == stamp && engineB_->contextLength() >= engine_->contextLength() &&
        engineB_->kvType() == engine_->kvType())
        return {};
    QElapsedTimer clock;
    clock.start();
    engineB_.reset();  // the previous B's memory first
    modelPathB_.clear();
    EngineOptions options;
    options.modelPath = path;
    options.threads = engine_->device().threads();  // as A runs, so that one file read twice gives the same logits
    options.contextLength = engine_->contextLength();
    options.kvType = engine_->kvType();
    options.kvTypeFallback = true;
    options.warmUp = false;
    // Engine::load checks the memory it needs against what is available now, with A loaded.
    auto loaded = Engine::load(options);
    if (!loaded) {
        if (loaded.error().kind == ErrorKind::OutOfMemory)
            return tr("The two models do not fit in memory together: %1").arg(QString::fromStdString(loaded.error().message));
        return tr("The second model could not be loaded: %1").arg(QString::fromStdString(loaded.error().message));
    }
    engineB_ = std::move(*loaded);
    modelPathB_ = path;
    stampB_ = stamp;
    if (loadMs) *loadMs = double(clock.nsecsElapsed()) / 1e6;
    return {};
}

void EngineWorker::releaseModelB() {
    engineB_.reset();
    modelPathB_.clear();
    stampB_.clear();
}

}  // namespace inferscope
