#pragma once
// Shared by the GUI tests: the bundled model, waiting on signals with a clear failure.
#include <QCoreApplication>
#include <QDir>
#include <QFile>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QTest>

#include "engine/bundled_model.h"
#include "engine/engine_controller.h"

namespace inferscope::testing_gui {

// Settings and data in Qt's test locations (never the user's), under a test organisation.
inline void useTestLocations() {
    QStandardPaths::setTestModeEnabled(true);
    QCoreApplication::setOrganizationName(QStringLiteral("InferscopeTests"));
}

// Removes every file in the folder (a database, its -wal and -shm, exports) between test functions.
inline void removeFilesIn(const QString& folder) {
    const QDir dir(folder);
    for (const QString& f : dir.entryList(QDir::Files | QDir::Hidden)) QFile::remove(dir.filePath(f));
}

inline QString bundledModel() { return QStringLiteral(INFERSCOPE_RESOURCES_DIR "/models/stories260K.gguf"); }

// Loads a model and waits for it (fails the test on error).
inline bool loadAndWait(EngineController& engine, const QString& path, int contextLength = 0) {
    QSignalSpy loaded(&engine, &EngineController::modelChanged);
    QSignalSpy failed(&engine, &EngineController::loadFailed);
    engine.loadModel(path, contextLength);
    (void)QTest::qWaitFor([&] { return !loaded.isEmpty() || !failed.isEmpty(); }, 6000);  // either is read below
    if (!failed.isEmpty()) qWarning() << "load failed:" << failed.first().first().toString();
    return !loaded.isEmpty();
}

inline GenerationJob textJob(const std::string& text, int maxTokens, float temperature = 0.0f) {
    GenerationJob job;
    PromptChunk chunk;
    chunk.text = text;
    chunk.addBos = true;
    job.chunks.push_back(chunk);
    job.sampler.temperature = temperature;
    job.sampler.topN = 5;
    job.maxTokens = maxTokens;
    return job;
}

}  // namespace inferscope::testing_gui
