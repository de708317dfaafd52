// EngineWorker's side by side (issue 30): one prompt to the loaded model (A) and to a second model
// (B) at once. B is loaded beside A as a comparison loads it (engine_worker_compare.cpp) and
// generates on a thread of its own while A generates on this one; each engine binds its own
// compute threads (the jobs split the cores between them). The worker's queue waits for both.
#include <thread>

#include "engine/engine_worker.h"

namespace inferscope {

void EngineWorker::generatePair(const GenerationJob& a, const GenerationJob& b) {
    if (shuttingDown()) return;
    auto failBoth = [&](const QString& message) {
        emit generationFailed(b.id, message);
        emit generationFailed(a.id, message);
    };
    if (!engine_) return failBoth(tr("No model is loaded."));
    if (b.otherModel.empty()) return failBoth(tr("No second model is chosen."));
    double loadMs = 0;
    if (QString error = ensureModelB(b.otherModel, &loadMs); !error.isEmpty()) return failBoth(error);
    emit pairModelReady(b.id, describeLoaded(*engineB_, modelPathB_), loadMs);
    const int threads = engine_->device().threads();
    std::thread side([this, &b] { runJob(*engineB_, b, true, true); });
    runJob(*engine_, a, false, false);
    side.join();
    // The conversation's model back on the cores it had (the pair's A ran on its share of them).
    if (engine_->device().threads() != threads && engine_->setThreads(threads))
        emit deviceChanged(QString::fromStdString(engine_->device().description()));
}

}  // namespace inferscope
