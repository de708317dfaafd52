#pragma once
// What EngineController shows QML, as four typed values instead of thirty loose properties, each
// with the one signal that changes it:
// - LoadedFacts (`EngineController.loaded`): what is loaded — name, file or server, device,
//   precision, shapes, context, weights, the KV cache's type and reservation, the stages the
//   steps carry. Changed by a load or connection, the thread count, the KV type, a server's
//   first extended step: rare, and compared before it is said to have changed.
// - LiveFigures (`.figures`): the running figures of the status bar — context used, KV bytes in
//   use, prefill and decode speed, time to the first token. Changed with every step batch.
// - LoadingProgress (`.loading`): a load under way — how far, which stage, which file.
// - ServerListing (`.serverListing`): the Connect dialog's GET /v1/models — its ids, its error,
//   whether one is under way.
// The C++ side keeps its accessors (EngineController::modelName() …); these are what QML binds.

#include <QMetaType>
#include <QString>
#include <QStringList>
#include <QtQml/qqmlregistration.h>

#include "engine/model_details.h"

namespace inferscope {

struct LoadedFacts {
    Q_GADGET
    QML_ANONYMOUS
    Q_PROPERTY(QString name MEMBER name)
    // A file's path, or a server's entry "http://host:port#model" (the recent list's).
    Q_PROPERTY(QString path MEMBER path)
    Q_PROPERTY(QString serverUrl MEMBER serverUrl)  // a server's address, "" for a file
    Q_PROPERTY(QString device MEMBER device)
    Q_PROPERTY(QString kernelSet MEMBER kernelSet)  // "avx2": the hand-written kernels in use
    Q_PROPERTY(QString precision MEMBER precision)
    Q_PROPERTY(inferscope::ModelDetails details MEMBER details)
    Q_PROPERTY(QString detectedTemplate MEMBER detectedTemplate)
    Q_PROPERTY(int contextLength MEMBER contextLength)
    Q_PROPERTY(double weightBytes MEMBER weightBytes)
    Q_PROPERTY(double kvBytesReserved MEMBER kvBytesReserved)
    Q_PROPERTY(QString kvType MEMBER kvType)  // "f32", "f16", "q8_0", "q4_0"; "" without a model
    // The sampler stages whose probabilities the steps carry: all six locally; a server's "raw"
    // only, all six once a step came with Inferscope's extension.
    Q_PROPERTY(QStringList reportedStages MEMBER reportedStages)
public:
    QString name, path, serverUrl, device, kernelSet, precision;
    ModelDetails details;
    QString detectedTemplate;
    int contextLength = 0;
    double weightBytes = 0, kvBytesReserved = 0;
    QString kvType;
    QStringList reportedStages;
    bool operator==(const LoadedFacts&) const = default;
};

struct LiveFigures {
    Q_GADGET
    QML_ANONYMOUS
    Q_PROPERTY(int contextUsed MEMBER contextUsed)
    Q_PROPERTY(double kvBytesUsed MEMBER kvBytesUsed)
    Q_PROPERTY(double prefillTokensPerSecond MEMBER prefillTokensPerSecond)
    Q_PROPERTY(double decodeTokensPerSecond MEMBER decodeTokensPerSecond)
    Q_PROPERTY(double timeToFirstTokenMs MEMBER timeToFirstTokenMs)
public:
    int contextUsed = 0;
    double kvBytesUsed = 0, prefillTokensPerSecond = 0, decodeTokensPerSecond = 0, timeToFirstTokenMs = 0;
    bool operator==(const LiveFigures&) const = default;
};

struct LoadingProgress {
    Q_GADGET
    QML_ANONYMOUS
    Q_PROPERTY(double progress MEMBER progress)  // 0…1
    Q_PROPERTY(QString stage MEMBER stage)
    Q_PROPERTY(QString path MEMBER path)  // the file's name, or "model @ host:port"
public:
    double progress = 0;
    QString stage, path;
    bool operator==(const LoadingProgress&) const = default;
};

struct ServerListing {
    Q_GADGET
    QML_ANONYMOUS
    Q_PROPERTY(QStringList models MEMBER models)
    Q_PROPERTY(QString error MEMBER error)
    Q_PROPERTY(bool listing MEMBER listing)
public:
    QStringList models;
    QString error;
    bool listing = false;
    bool operator==(const ServerListing&) const = default;
};

}  // namespace inferscope

Q_DECLARE_METATYPE(inferscope::LoadedFacts)
Q_DECLARE_METATYPE(inferscope::LiveFigures)
Q_DECLARE_METATYPE(inferscope::LoadingProgress)
Q_DECLARE_METATYPE(inferscope::ServerListing)
