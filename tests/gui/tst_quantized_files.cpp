// Every quantized file llama-quantize writes opens in the app and answers: the chat shows exactly
// the tokens the engine computes for that file (the engine's own accuracy is test_engine_quant's),
// and the Model panel names the file's tensor types as its header lists them.
#include <QDir>
#include <QtTest>
#include <map>

#include "chat_fixture.h"
#include "engine/engine.h"
#include "gguf/gguf_file.h"
#include "gui_test_helpers.h"

using namespace inferscope;
using namespace inferscope::testing_gui;

namespace {

QString quantDir() { return QStringLiteral(INFERSCOPE_SHARED_DIR "/models/quant"); }

// The tensor types of a GGUF header, counted ("Q4_K" -> 31), read without the app.
std::map<std::string, int> headerTypes(const QString& path) {
    std::map<std::string, int> types;
    auto file = GgufFile::open(path.toStdString());
    if (!file) return types;
    for (const auto& t : file->tensors()) ++types[std::string(ggmlTypeName(t.typeId))];
    return types;
}

}  // namespace

class TestQuantizedFiles : public QObject {
    Q_OBJECT
private slots:
    void initTestCase() { useTestLocations(); }

    void everyFileOpensAndAnswers() {
        const QStringList files = QDir(quantDir()).entryList({QStringLiteral("*.gguf")}, QDir::Files, QDir::Name);
        if (files.isEmpty()) QSKIP(qPrintable(QStringLiteral("golden files %1 not found: skipped").arg(quantDir())));
        QCOMPARE(files.size(), 23);  // 22 quantized files and their F32 source
        for (const QString& name : files) {
            const QString path = quantDir() + QLatin1Char('/') + name;
            ChatFixture f(16);
            QVERIFY2(loadAndWait(*f.engine, path), qPrintable(name));

            std::map<std::string, int> listed;
            for (const auto& [type, count] : f.engine->modelDetails().tensorTypes) listed[type.toStdString()] = count;
            QVERIFY2(listed == headerTypes(path), qPrintable(name));
            const bool quantized = !name.endsWith(QLatin1String("-wide.gguf"));
            QCOMPARE(f.engine->modelDetails().formatNote.isEmpty(), !quantized);

            QVERIFY2(f.answer(QStringLiteral("Once upon a time")), qPrintable(name));
            const ChatMessage& answer = f.last();
            std::vector<int32_t> shownIds;
            for (const StepRecord& s : answer.steps) shownIds.push_back(s.sample.id);

            // The engine on its own, as the app loads it (default options), greedy, same prompt.
            EngineOptions options;
            options.modelPath = path.toStdString();
            auto engine = Engine::load(options);
            QVERIFY2(engine.has_value(), qPrintable(name));
            GenerateRequest req;
            req.prompt = (*engine)->tokenizer().encode("Once upon a time", true);
            req.sampler.temperature = 0.0f;
            req.maxTokens = 16;
            auto direct = (*engine)->generate(req, nullptr, {});
            QVERIFY2(direct.has_value(), qPrintable(name));
            QVERIFY2(shownIds == direct->tokens, qPrintable(name));
            QVERIFY2(!answer.text.trimmed().isEmpty(), qPrintable(name));
        }
    }
};

QTEST_MAIN(TestQuantizedFiles)
#include "tst_quantized_files.moc"
