#pragma once
// The GUI tests' fake homes for the model library: Ollama's store (a manifest naming a blob) and LM
// Studio's tree, each holding the bundled stories260K, and a folder of the person's own with a file
// that only claims to be GGUF. (tests/catalog/catalog_test_helpers.h builds every tool's layout for
// the catalog's own tests.)
#include <QCryptographicHash>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QTemporaryDir>

#include "catalog/local_models.h"
#include "gui_test_helpers.h"

namespace inferscope::testing_gui {

inline bool writeFile(const QString& path, const QByteArray& bytes) {
    QDir().mkpath(QFileInfo(path).absolutePath());
    QFile f(path);
    return f.open(QIODevice::WriteOnly) && f.write(bytes) == bytes.size();
}

inline QByteArray readFile(const QString& path) {
    QFile f(path);
    return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray();
}

struct FakeHome {
    QTemporaryDir dir;
    catalog::Environment env;
    QString ollamaBlob, mine;

    FakeHome() {
        const QString home = dir.filePath("home");
        env.home = home.toStdString();
        env.systemOllamaModels = dir.filePath("system-ollama").toStdString();  // absent
        const QByteArray model = readFile(bundledModel());
        const QByteArray sha = QCryptographicHash::hash(model, QCryptographicHash::Sha256).toHex();
        ollamaBlob = home + "/.ollama/models/blobs/sha256-" + sha;
        writeFile(ollamaBlob, model);
        writeFile(home + "/.ollama/models/manifests/registry.ollama.ai/library/stories/260k",
                  R"({"schemaVersion":2,"layers":[{"mediaType":"application/vnd.ollama.image.model","digest":"sha256:)" + sha +
                      R"(","size":)" + QByteArray::number(model.size()) + "}]}");
        writeFile(home + "/.lmstudio/models/lmstudio-community/stories260K-GGUF/stories260K-F32.gguf", model);
        mine = dir.filePath("mine");
        writeFile(mine + "/notes.gguf", "not a model at all");
    }
};

}  // namespace inferscope::testing_gui
