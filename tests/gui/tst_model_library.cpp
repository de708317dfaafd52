// ModelLibrary: the models a fake home's tools hold, as the window's library lists them — names as
// each tool gives them, the header's facts, the fit against this machine's memory, the person's
// folders kept in the settings.
#include <QDir>
#include <QFile>
#include <QSettings>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTest>
#include <QUrl>
#include <map>

#include "app/units.h"
#include "catalog/model_summary.h"
#include "gguf/gguf_file.h"
#include "gui_test_helpers.h"
#include "fake_tool_homes.h"
#include "library/model_library.h"

using namespace inferscope;
using namespace inferscope::testing_gui;

namespace {

// The rows by name: each role as the view reads it.
std::map<QString, QVariantMap> rows(const ModelLibrary& lib) {
    std::map<QString, QVariantMap> out;
    const auto names = lib.roleNames();
    for (int r = 0; r < lib.rowCount(); ++r) {
        QVariantMap row;
        for (auto it = names.begin(); it != names.end(); ++it) row[QString::fromLatin1(it.value())] = lib.data(lib.index(r), it.key());
        out[row["name"].toString()] = row;
    }
    return out;
}

bool scanned(ModelLibrary& lib) {
    QSignalSpy listed(&lib, &ModelLibrary::listed);
    return QTest::qWaitFor([&] { return !lib.scanning() && listed.count() > 0; }, 20000);
}

// Looks through `env`'s folders and waits for the rows.
bool scan(ModelLibrary& lib, const catalog::Environment& env) {
    lib.setEnvironment(env);
    lib.rescan();
    return scanned(lib);
}

// What the loader's check says of the bundled model.
std::optional<FitAssessment> bundledFit(int32_t context, KvType kv, const MemoryFigures& have) {
    auto file = GgufFile::open(bundledModel().toStdString());
    if (!file) return std::nullopt;
    const auto summary = catalog::summarizeModel(*file);
    return summary ? catalog::fitOf(*summary, {context, kv, ComputePrecision::Auto, 0}, have) : std::nullopt;
}

}  // namespace

class TestModelLibrary : public QObject {
    Q_OBJECT
private slots:
    void initTestCase() { useTestLocations(); }

    void listsWhatEachToolHasWithTheFit() {
        FakeHome home;
        ModelLibrary lib(nullptr);
        lib.setEnvironment(home.env);
        QSignalSpy listed(&lib, &ModelLibrary::listed);
        QVERIFY(lib.addFolder(home.mine));  // looks through everything again
        QVERIFY(lib.scanning());
        QTRY_VERIFY_WITH_TIMEOUT(!lib.scanning() && listed.count() > 0, 20000);

        const auto r = rows(lib);
        QCOMPARE(int(r.size()), 3);
        QCOMPARE(lib.summary(), QStringLiteral("3 models: 1 from Ollama, 1 from LM Studio, 1 from your folder"));

        const QVariantMap ollama = r.at("stories:260k");
        QCOMPARE(ollama["source"].toString(), QStringLiteral("Ollama"));
        QCOMPARE(ollama["path"].toString(), home.ollamaBlob);  // loaded where it lies
        QCOMPARE(ollama["architecture"].toString(), QStringLiteral("llama"));
        QCOMPARE(ollama["quantization"].toString(), QStringLiteral("F32"));
        QCOMPARE(ollama["context"].toInt(), 2048);
        QCOMPARE(ollama["bytes"].toDouble(), double(QFileInfo(bundledModel()).size()));
        QVERIFY(ollama["runnable"].toBool());
        // The fit: the loader's own figure for this file at its trained context with an f16 cache.
        const auto fit = bundledFit(0, KvType::F16, readMemoryFigures());
        QVERIFY(fit && fit->verdict == FitVerdict::Fits);
        QCOMPARE(ollama["fit"].toString(), QStringLiteral("fits"));
        QCOMPARE(ollama["fitText"].toString(), QStringLiteral("fits: %1 with 2,048 tokens of context").arg(binaryBytes(fit->need.residentBytes())));

        const QVariantMap lmstudio = r.at("lmstudio-community/stories260K-GGUF/stories260K-F32.gguf");
        QCOMPARE(lmstudio["source"].toString(), QStringLiteral("LM Studio"));
        QCOMPARE(lmstudio["fit"].toString(), QStringLiteral("fits"));

        const QVariantMap notes = r.at("notes.gguf");
        QCOMPARE(notes["source"].toString(), QStringLiteral("your folder"));
        QVERIFY(!notes["runnable"].toBool());
        QCOMPARE(notes["fit"].toString(), QString());
        QCOMPARE(notes["fitText"].toString(), QStringLiteral("cannot be read: notes.gguf: not a GGUF file: magic is \"not \", expected \"GGUF\""));
    }

    // Against a machine with less memory: a smaller context, or nothing; each figure the loader's.
    void aSmallerMachine_data() {
        QTest::addColumn<QString>("verdict");
        QTest::newRow("room for half the cache") << QStringLiteral("smaller");
        QTest::newRow("not even the weights") << QStringLiteral("no");
    }
    void aSmallerMachine() {
        QFETCH(QString, verdict);
        MemoryFigures machine;
        machine.available = uint64_t(1) << 40;
        const auto whole = bundledFit(0, KvType::F16, machine);
        QVERIFY(whole && whole->verdict == FitVerdict::Fits);
        const uint64_t available = verdict == "smaller" ? whole->need.residentBytes() - whole->need.kvCache / 2 : uint64_t(1) << 20;
        machine.available = available;
        FakeHome home;
        ModelLibrary lib(nullptr);
        lib.setMemoryProbe([machine] { return machine; });
        QVERIFY(scan(lib, home.env));
        QCOMPARE(lib.memoryNow(), QStringLiteral("%1 available now").arg(binaryBytes(available)));
        const auto fit = bundledFit(0, KvType::F16, machine);
        QVERIFY(fit);
        const QVariantMap row = rows(lib).at("stories:260k");
        QCOMPARE(row["fit"].toString(), verdict);
        if (verdict == "smaller") {
            QCOMPARE(fit->verdict, FitVerdict::FitsSmallerContext);
            QVERIFY(fit->context > 0 && fit->context < 2048);
            QCOMPARE(row["fitText"].toString(), QStringLiteral("fits with %1 tokens of context (%2), not the trained 2,048")
                                                    .arg(groupedCount(uint64_t(fit->context)), binaryBytes(fit->need.residentBytes())));
        } else {
            QCOMPARE(fit->verdict, FitVerdict::DoesNotFit);
            QVERIFY(fit->shortfall);
            QCOMPARE(row["fitText"].toString(), QStringLiteral("does not fit: needs %1, %2 allows %3")
                                                    .arg(binaryBytes(fit->shortfall->needed), QString::fromStdString(fit->shortfall->limit),
                                                         binaryBytes(fit->shortfall->allowed)));
        }
    }

    // The fit follows the KV cache type the app loads with.
    void theKvTypeChangesTheFit() {
        FakeHome home;
        ModelLibrary lib(nullptr);
        QVERIFY(scan(lib, home.env));
        const QString f16 = rows(lib).at("stories:260k")["fitText"].toString();
        QSignalSpy changed(&lib, &QAbstractItemModel::dataChanged);
        lib.setKvType(KvType::F32);
        QCOMPARE(changed.count(), 1);
        const QString f32 = rows(lib).at("stories:260k")["fitText"].toString();
        QVERIFY2(f32 != f16, qPrintable(f32));
        const auto fit = bundledFit(0, KvType::F32, readMemoryFigures());
        QVERIFY(fit);
        QCOMPARE(f32, QStringLiteral("fits: %1 with 2,048 tokens of context").arg(binaryBytes(fit->need.residentBytes())));
    }

    // Another context: the same check at that length; the choices a slider offers; the choice kept.
    void contextChoicesAndTheirFit() {
        FakeHome home;
        ModelLibrary lib(nullptr);
        QVERIFY(scan(lib, home.env));
        int row = -1;
        for (int r = 0; r < lib.rowCount(); ++r)
            if (lib.data(lib.index(r), ModelLibrary::NameRole).toString() == "stories:260k") row = r;
        QVERIFY(row >= 0);
        QCOMPARE(lib.contextChoices(row), (QList<int>{512, 1024, 2048}));
        const auto fit = bundledFit(512, KvType::F16, readMemoryFigures());
        QVERIFY(fit && fit->verdict == FitVerdict::Fits && fit->context == 512);
        const QVariantMap at512 = lib.fitAt(row, 512);
        QCOMPARE(at512["fit"].toString(), QStringLiteral("fits"));
        QCOMPARE(at512["text"].toString(), QStringLiteral("fits: %1 with 512 tokens of context").arg(binaryBytes(fit->need.residentBytes())));
        QCOMPARE(lib.fitAt(row, 0)["text"], lib.data(lib.index(row), ModelLibrary::FitTextRole));  // 0: the trained length
        QCOMPARE(lib.fitAt(lib.rowCount(), 512), QVariantMap());

        QSettings().remove("library/context");
        QCOMPARE(lib.rememberedContext(home.ollamaBlob), 0);
        lib.rememberContext(home.ollamaBlob, 1024);
        QCOMPARE(lib.rememberedContext(home.ollamaBlob), 1024);
        ModelLibrary kept(nullptr);
        kept.setPersistent(true);
        kept.rememberContext(home.ollamaBlob, 512);
        ModelLibrary later(nullptr);
        later.setPersistent(true);
        QCOMPARE(later.rememberedContext(home.ollamaBlob), 512);
        QSettings().remove("library/context");
    }

    // A folder that is not one is refused; the person's folders are kept in the settings.
    void foldersAreCheckedAndKept() {
        FakeHome home;
        QSettings().remove("library/folders");
        {
            ModelLibrary lib(nullptr);
            lib.setEnvironment(home.env);
            lib.setPersistent(true);
            QVERIFY(!lib.addFolder(home.dir.filePath("no-such-folder")));
            QVERIFY(!lib.addFolder(home.mine + "/notes.gguf"));  // a file
            QVERIFY(lib.addFolder(QUrl::fromLocalFile(home.mine).toString()));
            QVERIFY(!lib.addFolder(home.mine));  // listed already
            QCOMPARE(lib.folders(), QStringList{home.mine});
        }  // destroyed mid-scan: it stops and waits
        ModelLibrary again(nullptr);
        again.setPersistent(true);
        QCOMPARE(again.folders(), QStringList{home.mine});
        again.setEnvironment(home.env);
        again.removeFolder(home.mine);
        QVERIFY(scanned(again));
        QCOMPARE(again.folders(), QStringList());
        QCOMPARE(again.count(), 2);  // Ollama's and LM Studio's
        QCOMPARE(QSettings().value("library/folders").toStringList(), QStringList());
    }

    void nothingFound() {
        QTemporaryDir empty;
        catalog::Environment env;
        env.home = empty.path().toStdString();
        env.systemOllamaModels = empty.filePath("none").toStdString();
        ModelLibrary lib(nullptr);
        QVERIFY(scan(lib, env));
        QCOMPARE(lib.count(), 0);
        QCOMPARE(lib.summary(), QStringLiteral("No GGUF models found on this computer."));
    }
};

QTEST_GUILESS_MAIN(TestModelLibrary)
#include "tst_model_library.moc"
