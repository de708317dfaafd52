// The KV-cache calculator reproduces the product's figures exactly (Llama 3.1-8B: 131,072 B per
// token, 536,870,912 B at 4,096 tokens, 16,777,216,000 B at 128,000, 17,179,869,184 B for 32 users
// × 4,096, MHA = 4 × GQA), the other presets' shapes, the engine's messages for invalid inputs,
// the units it prints, and the loaded model as a preset (QAbstractItemModelTester on the presets).
#include <QAbstractItemModelTester>
#include <QFile>
#include <QSignalSpy>
#include <QTest>

#include "gui_test_helpers.h"
#include "visualizer/kv/kv_calculator_model.h"
#include "app/units.h"

using namespace inferscope;
using namespace inferscope::testing_gui;

class TestKvCalculator : public QObject {
    Q_OBJECT

    static int presetRow(const KvPresetModel& presets, const QString& name) {
        for (int row = 0; row < presets.count(); ++row)
            if (presets.preset(row).name == name) return row;
        return -1;
    }

private slots:
    void initTestCase() {
        QStandardPaths::setTestModeEnabled(true);
        QCoreApplication::setOrganizationName(QStringLiteral("InferscopeTests"));
    }

    void llama31With8BReproducesTheProductFigures() {
        KvCalculatorModel calc;
        QCOMPARE(calc.presetIndex(), 0);
        QCOMPARE(calc.presets()->preset(0).name, QStringLiteral("Llama 3.1-8B"));
        QCOMPARE(calc.layers(), 32);
        QCOMPARE(calc.heads(), 32);
        QCOMPARE(calc.kvHeads(), 8);
        QCOMPARE(calc.headDim(), 128);
        QCOMPARE(calc.dtype(), QStringLiteral("f16"));
        QCOMPARE(calc.tokens(), 4096);
        QVERIFY(calc.valid());
        QCOMPARE(calc.attention(), QStringLiteral("GQA"));
        QCOMPARE(calc.figures().bytesPerToken, uint64_t(131072));
        QCOMPARE(binaryBytes(131072), QStringLiteral("128 KiB"));
        QCOMPARE(calc.bytesPerUser(), 536870912.0);
        QCOMPARE(binaryBytes(536870912), QStringLiteral("512 MiB"));
        // GQA: 32 query heads share 8 KV heads, a quarter of full multi-head attention.
        QCOMPARE(calc.figures().mhaBytesPerToken, 4 * calc.figures().bytesPerToken);
        QCOMPARE(calc.figures().mqaBytesPerToken, calc.figures().bytesPerToken / 8);

        calc.setTokens(128000);
        QCOMPARE(calc.bytesPerUser(), 16777216000.0);
        QCOMPARE(decimalBytes(16777216000ull), QStringLiteral("16.8 GB"));  // the product's "~16 GB"
        QCOMPARE(binaryBytes(16777216000ull), QStringLiteral("15.6 GiB"));
        QCOMPARE(calc.presetIndex(), -1);  // edited

        calc.setTokens(4096);
        calc.setUsers(32);
        QCOMPARE(calc.figures().totalBytes, uint64_t(17179869184ull));
        QCOMPARE(binaryBytes(17179869184ull), QStringLiteral("16 GiB"));
        QCOMPARE(exactBytes(17179869184ull), QStringLiteral("17,179,869,184 B"));
        QCOMPARE(calc.bytesPerUser(), 536870912.0);
        QCOMPARE(calc.figures().mhaTotalBytes, 4 * calc.figures().totalBytes);
    }

    void thePresetsShapes() {
        KvCalculatorModel calc;
        KvPresetModel& presets = *calc.presets();
        QAbstractItemModelTester tester(&presets, QAbstractItemModelTester::FailureReportingMode::QtTest);
        QCOMPARE(presets.count(), 11);
        struct Expected { const char* name; uint64_t bytesPerToken; const char* attention; };
        // FP16: 2 × layers × KV heads × head dim × 2 bytes
        for (const Expected& e : {Expected{"Llama 3.1-8B", 131072, "GQA"}, Expected{"Llama 2 7B", 524288, "MHA"},
                                  Expected{"Mistral 7B", 131072, "GQA"}, Expected{"TinyLlama 1.1B", 22528, "GQA"},
                                  Expected{"Llama 3.2 1B", 32768, "GQA"}, Expected{"Llama 3.2 3B", 114688, "GQA"},
                                  Expected{"Qwen 2.5 0.5B", 12288, "GQA"}, Expected{"Qwen 2.5 7B", 57344, "GQA"},
                                  Expected{"Gemma 3 1B", 26624, "MQA"}, Expected{"Gemma 3 4B", 139264, "GQA"},
                                  Expected{"Phi-3 mini 4k", 393216, "MHA"}}) {
            const int row = presetRow(presets, e.name);
            QVERIFY2(row >= 0, e.name);
            calc.applyPreset(row);
            QCOMPARE(calc.presetIndex(), row);
            QCOMPARE(calc.figures().bytesPerToken, e.bytesPerToken);
            QCOMPARE(calc.attention(), QString::fromLatin1(e.attention));
        }
        // Llama 2 7B is multi-head: its MHA figure is itself, 2 GiB at 4,096 tokens.
        calc.applyPreset(presetRow(presets, "Llama 2 7B"));
        QCOMPARE(calc.figures().mhaBytesPerToken, calc.figures().bytesPerToken);
        QCOMPARE(binaryBytes(calc.figures().totalBytes), QStringLiteral("2 GiB"));
        QCOMPARE(presets.data(presets.index(3), KvPresetModel::SummaryRole).toString(),
                 QStringLiteral("22 layers · 32 heads · 4 KV heads · head dim 64 · FP16"));
    }

    // Gemma 3 and Phi-3 attend to a window on most layers: the calculator gives what a cache keeping
    // only that window needs. Gemma 3 1B, FP16, 4,096 tokens: 1,024 B per layer per token; 4 global
    // layers × 4,096 + 22 sliding × 512 = 16,777,216 + 11,534,336 = 28,311,552 B (27 MiB) instead
    // of 104 MiB. Phi-3 mini: 32 layers × 12,288 B × 2,047 = 804,913,152 B.
    void slidingWindowLayersKeepOnlyTheirWindow() {
        KvCalculatorModel calc;
        KvPresetModel& presets = *calc.presets();
        calc.applyPreset(presetRow(presets, "Gemma 3 1B"));
        QCOMPARE(calc.slidingLayers(), 22);
        QCOMPARE(calc.window(), 512);
        QCOMPARE(calc.bytesPerUser(), 109051904.0);
        QCOMPARE(calc.windowedBytesPerUser(), 28311552.0);
        calc.setTokens(300);  // within the window: everything is needed
        QCOMPARE(calc.windowedBytesPerUser(), calc.bytesPerUser());
        calc.applyPreset(presetRow(presets, "Phi-3 mini 4k"));
        QCOMPARE(calc.windowedBytesPerUser(), 804913152.0);
        calc.applyPreset(presetRow(presets, "Llama 3.2 1B"));  // no sliding layers
        QCOMPARE(calc.slidingLayers(), 0);
        QCOMPARE(calc.windowedBytesPerUser(), calc.bytesPerUser());
        // Fewer layers than slide: every layer slides, no error.
        calc.applyPreset(presetRow(presets, "Gemma 3 1B"));
        calc.setLayers(10);
        QVERIFY2(calc.valid(), qPrintable(calc.error()));
        QCOMPARE(calc.slidingLayers(), 10);
        QCOMPARE(calc.windowedBytesPerUser(), 10.0 * 1024 * 512);
        // The core refuses an impossible shape in words.
        KvShape shape{26, 4, 1, 256, 2, 27, 512};
        QCOMPARE(QString::fromStdString(computeKvFigures(shape, 4096, 1).error().message),
                 QStringLiteral("sliding-window layers (27) cannot exceed layers (26)"));
        shape = {26, 4, 1, 256, 2, 22, 0};
        QCOMPARE(QString::fromStdString(computeKvFigures(shape, 4096, 1).error().message),
                 QStringLiteral("the sliding window must be positive when some layers slide"));
    }

    void elementTypesHalveAndQuarter() {
        KvCalculatorModel calc;
        calc.setDtype("f32");
        QCOMPARE(calc.bytesPerToken(), 262144.0);
        calc.setDtype("bf16");
        QCOMPARE(calc.bytesPerToken(), 131072.0);
        calc.setDtype("int8");
        QCOMPARE(calc.bytesPerToken(), 65536.0);
        QCOMPARE(calc.bytesPerElement(), 1.0);
        QCOMPARE(calc.dtypeIndex(), 3);
        QCOMPARE(calc.dtypeLabels(), (QStringList{"FP32", "FP16", "BF16", "INT8", "Q8_0", "Q4_0"}));
        calc.setDtypeIndex(1);
        QCOMPARE(calc.dtype(), QStringLiteral("f16"));
        QCOMPARE(calc.bytesPerToken(), 131072.0);
        // The KV cache's block types: head dim 128 is 4 blocks of 32; Q8_0 34 bytes each, Q4_0 18.
        calc.setDtype("q8_0");
        QCOMPARE(calc.bytesPerToken(), 2.0 * 32 * 8 * 4 * 34);  // 69,632
        QCOMPARE(calc.bytesPerElement(), 0.0);                 // not a whole number of bytes
        calc.setDtype("q4_0");
        QCOMPARE(calc.bytesPerToken(), 2.0 * 32 * 8 * 4 * 18);
        calc.setHeadDim(48);
        QVERIFY(!calc.valid());
        calc.setHeadDim(128);
    }

    void invalidInputsShowTheEnginesMessage() {
        KvCalculatorModel calc;
        QSignalSpy results(&calc, &KvCalculatorModel::resultsChanged);
        calc.setKvHeads(64);
        QVERIFY(!calc.valid());
        QCOMPARE(calc.error(), QStringLiteral("KV heads (64) cannot exceed query heads (32)"));
        QCOMPARE(calc.bytesPerToken(), 0.0);
        QCOMPARE(calc.totalBytes(), 0.0);
        QCOMPARE(calc.attention(), QString());
        calc.setKvHeads(5);
        QCOMPARE(calc.error(), QStringLiteral("query heads (32) must be a multiple of KV heads (5)"));
        calc.setKvHeads(8);
        QVERIFY(calc.valid());
        calc.setLayers(0);
        QCOMPARE(calc.error(), QStringLiteral("layers, heads, KV heads, head dim and element size must be positive"));
        calc.setLayers(-3);  // a negative count is not a huge unsigned one
        QCOMPARE(calc.error(), QStringLiteral("layers, heads, KV heads, head dim and element size must be positive"));
        calc.setLayers(32);
        calc.setUsers(0);
        QCOMPARE(calc.error(), QStringLiteral("tokens and users must be positive"));
        calc.setUsers(1);
        calc.setDtype("fp8");
        QCOMPARE(calc.error(), QStringLiteral("dtype must be f32, f16, bf16, int8, q8_0 or q4_0, got 'fp8'"));
        calc.setDtype("f32");
        calc.setLayers(2000000000);
        calc.setHeads(1000000);
        calc.setKvHeads(1000000);
        calc.setTokens(100000000);
        QCOMPARE(calc.error(), QStringLiteral("the KV-cache size overflows 64 bits"));
        QVERIFY(results.count() >= 9);
        calc.applyPreset(0);
        QVERIFY(calc.valid());
        QCOMPARE(calc.users(), 1);
    }

    // QML reads the figures as one value: what the accessors give, notified only when a figure or
    // the message changed.
    void theResultsValueMatchesTheAccessors() {
        KvCalculatorModel calc;
        const KvCalculatorResults& r = calc.results();
        QVERIFY(r.valid);
        QCOMPARE(r.bytesPerToken, calc.bytesPerToken());
        QCOMPARE(r.totalBytes, calc.totalBytes());
        QCOMPARE(r.mqaTotalBytes, calc.mqaTotalBytes());
        QCOMPARE(r.attention, calc.attention());
        QCOMPARE(calc.property("results").value<KvCalculatorResults>(), r);
        QSignalSpy results(&calc, &KvCalculatorModel::resultsChanged);
        calc.setLayers(-3);
        QCOMPARE(results.count(), 1);
        QVERIFY(!calc.results().valid);
        QCOMPARE(calc.results().error, calc.error());
        calc.setLayers(0);  // another input, the same message: nothing for QML to redo
        QCOMPARE(results.count(), 1);
    }

    void unitsKeepThreeDigits() {
        QCOMPARE(binaryBytes(0), QStringLiteral("0 B"));
        QCOMPARE(binaryBytes(1023), QStringLiteral("1023 B"));
        QCOMPARE(binaryBytes(1280), QStringLiteral("1.25 KiB"));
        QCOMPARE(binaryBytes(2621440), QStringLiteral("2.5 MiB"));
        QCOMPARE(binaryBytes(88576), QStringLiteral("86.5 KiB"));
        QCOMPARE(decimalBytes(131072), QStringLiteral("131 kB"));
        QCOMPARE(exactBytes(1280), QStringLiteral("1,280 B"));
        QCOMPARE(dtypeLabel("f16"), QStringLiteral("FP16"));
        QCOMPARE(dtypeLabel("int8"), QStringLiteral("INT8"));
    }

    void theLoadedModelIsAPreset() {
        EngineController engine(nullptr);
        KvCalculatorModel calc;
        QAbstractItemModelTester tester(calc.presets(), QAbstractItemModelTester::FailureReportingMode::QtTest);
        calc.setEngine(&engine);
        QCOMPARE(calc.presets()->count(), 11);  // no model yet
        QVERIFY(loadAndWait(engine, bundledModel()));
        QCOMPARE(calc.presets()->count(), 12);
        const int row = 11;
        const KvPreset& loaded = calc.presets()->preset(row);
        QVERIFY(loaded.loaded);
        QCOMPARE(calc.presets()->data(calc.presets()->index(row), KvPresetModel::NameRole).toString(), QStringLiteral("stories260K (loaded)"));
        calc.applyPreset(row);
        QCOMPARE(calc.layers(), 5);
        QCOMPARE(calc.heads(), 8);
        QCOMPARE(calc.kvHeads(), 4);
        QCOMPARE(calc.headDim(), 8);
        QCOMPARE(calc.dtype(), QStringLiteral("f16"));  // the engine's default cache type
        QCOMPARE(calc.tokens(), 2048);
        // The calculator's arithmetic and the engine's allocation agree.
        QCOMPARE(calc.bytesPerToken(), 640.0);
        QCOMPARE(calc.bytesPerUser(), engine.kvBytesReserved());
        QCOMPARE(calc.slidingLayers(), 0);
        // Another model replaces the row; the calculator follows it while it shows the loaded model.
        QVERIFY(loadAndWait(engine, QStringLiteral(INFERSCOPE_TEST_DATA_DIR "/llama-2-tiny-random.gguf")));
        QCOMPARE(calc.presets()->count(), 12);
        QCOMPARE(calc.presetIndex(), row);
        QCOMPARE(calc.layers(), engine.modelDetails().layers);
        QCOMPARE(calc.bytesPerUser(), engine.kvBytesReserved());
        // Gemma 2's alternate layers slide (13 of the tiny model's 26, window 32), as the engine reads them.
        const QString gemma2 = QStringLiteral(INFERSCOPE_SHARED_DIR "/models/arch/gemma2-tiny.gguf");
        if (QFile::exists(gemma2)) {
            QVERIFY(loadAndWait(engine, gemma2));
            QCOMPARE(calc.slidingLayers(), 13);
            QCOMPARE(calc.window(), 32);
            QCOMPARE(calc.layers(), 26);
            QCOMPARE(calc.windowedBytesPerUser(), calc.bytesPerToken() / 26 * (13.0 * calc.tokens() + 13.0 * 32));
        }
        calc.setEngine(nullptr);
        QCOMPARE(calc.presets()->count(), 11);
        QCOMPARE(calc.presetIndex(), -1);  // the shape stays, as a custom one
        QCOMPARE(calc.bytesPerUser(), engine.kvBytesReserved());
    }
};

QTEST_GUILESS_MAIN(TestKvCalculator)
#include "tst_kv_calculator.moc"
