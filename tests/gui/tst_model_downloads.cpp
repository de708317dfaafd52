// ModelDownloads against the hub fixture on 127.0.0.1 (tests/support/hub_fixture.h): a search, a
// repository's files with the fit read from each header, a download cut at 40% that resumes and
// is verified, one stopped by the person and resumed later, and one whose hash is not the hub's.
#include <QFile>
#include <QFileInfo>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTest>

#include "catalog/model_summary.h"
#include "gui_test_helpers.h"
#include "hub_fixture.h"
#include "library/model_downloads.h"
#include "library/model_library.h"

using namespace inferscope;
using namespace inferscope::testing_gui;

namespace {

constexpr const char* kRepo = "karpathy/stories-GGUF";
constexpr const char* kFile = "stories260K.gguf";

std::string bundledBytes() {
    QFile f(bundledModel());
    return f.open(QIODevice::ReadOnly) ? f.readAll().toStdString() : std::string();
}

QString fileAt(const ModelDownloads& d, int i, const char* key) { return d.files().value(i).toMap().value(key).toString(); }

// The app's two objects over an empty home, pointed at the fixture.
struct Hub {
    testing_hub::HubFixture fixture;
    QTemporaryDir home;
    ModelLibrary library{nullptr};
    ModelDownloads downloads{&library, nullptr};
    std::string model = bundledBytes();

    Hub() {
        fixture.addFile(kRepo, kFile, model);
        catalog::Environment env;
        env.home = home.path().toStdString();
        env.systemOllamaModels = env.home + "/system-ollama";
        library.setEnvironment(env);
        catalog::HubOptions options;
        options.endpoint = fixture.endpoint();
        options.stallTimeoutSeconds = 60;  // a stall lasts until the test stops the download
        options.sleep = [](int) {};  // retries do not wait
        downloads.setHubOptions(options);
    }
    QString destination() const {
        return QString::fromStdString(catalog::downloadDestination(catalog::inferscopeModelsFolder(library.environment()), kRepo, kFile).string());
    }
    bool listed() {
        downloads.listFiles(kRepo);
        return QTest::qWaitFor([&] { return !downloads.browsing() && !fileAt(downloads, 0, "fit").isEmpty(); }, 20000);
    }
    bool ended() { return QTest::qWaitFor([&] { return !downloads.downloading(); }, 30000); }
    bool rangeAsked() const {
        for (const auto& r : fixture.requests())
            if (r.listener == "cdn" && r.range.starts_with("bytes=") && !r.range.starts_with("bytes=0-")) return true;
        return false;
    }
};

}  // namespace

class TestModelDownloads : public QObject {
    Q_OBJECT
private slots:
    void initTestCase() { useTestLocations(); }

    void searchListAndFit() {
        Hub hub;
        hub.downloads.search("stories");
        QVERIFY(hub.downloads.browsing());
        QTRY_VERIFY_WITH_TIMEOUT(!hub.downloads.browsing(), 20000);
        QCOMPARE(hub.downloads.browseError(), QString());
        QCOMPARE(hub.downloads.repos().size(), 1);
        QCOMPARE(hub.downloads.repos().first().toMap()["id"].toString(), QString(kRepo));

        QVERIFY(hub.listed());
        QCOMPARE(hub.downloads.repo(), QString(kRepo));
        QCOMPARE(hub.downloads.files().size(), 1);
        QCOMPARE(fileAt(hub.downloads, 0, "path"), QString(kFile));
        QCOMPARE(hub.downloads.files().first().toMap()["bytes"].toDouble(), double(hub.model.size()));
        // The fit from the header the range requests read, as the library's rows say it.
        auto file = GgufFile::open(bundledModel().toStdString());
        const auto [fit, text] = hub.library.describeFit(*catalog::summarizeModel(*file));
        QCOMPARE(fileAt(hub.downloads, 0, "fit"), fit);
        QCOMPARE(fileAt(hub.downloads, 0, "fitText"), QStringLiteral("llama F32 · ") + text);
    }

    // Cut at 40%: resumed with Range, verified, put in our folder, and listed by the library.
    void aCutDownloadResumesAndIsVerified() {
        Hub hub;
        QVERIFY(hub.listed());
        hub.fixture.cutAtPercent = 40;
        QSignalSpy done(&hub.downloads, &ModelDownloads::downloaded);
        QVERIFY(hub.downloads.download(kFile));
        QVERIFY(!hub.downloads.download(kFile));  // one at a time
        QVERIFY(hub.ended());
        QCOMPARE(done.count(), 1);
        QCOMPARE(done.first().first().toString(), hub.destination());
        QCOMPARE(hub.downloads.downloadMessage(), QStringLiteral("Downloaded and verified: %1").arg(hub.destination()));
        QVERIFY(hub.rangeAsked());
        QFile f(hub.destination());
        QVERIFY(f.open(QIODevice::ReadOnly));
        QCOMPARE(f.readAll().toStdString(), hub.model);
        QCOMPARE(hub.downloads.bytesDone(), double(hub.model.size()));
        // The library looks again and finds it among our downloads.
        QTRY_VERIFY_WITH_TIMEOUT(hub.library.count() == 1 && !hub.library.scanning(), 20000);
        QCOMPARE(hub.library.data(hub.library.index(0), ModelLibrary::SourceRole).toString(), QStringLiteral("Inferscope downloads"));
        QCOMPARE(hub.library.data(hub.library.index(0), ModelLibrary::PathRole).toString(), hub.destination());
    }

    // Stopped by the person mid-file: the part stays; the next download resumes from it.
    void stoppedThenResumed() {
        Hub hub;
        QVERIFY(hub.listed());
        hub.fixture.stallNext = true;  // 10% arrives, then nothing
        QVERIFY(hub.downloads.download(kFile));
        // The stalled part is on disk (no progress is reported while nothing arrives).
        const QString part = QString::fromStdString(catalog::partialFileOf(hub.destination().toStdString()).string());
        QTRY_VERIFY_WITH_TIMEOUT(QFileInfo(part).size() > 0, 20000);
        QVERIFY(hub.downloads.downloading());
        hub.downloads.cancelDownload();
        QVERIFY(hub.ended());
        QCOMPARE(hub.downloads.downloadMessage(),
                 QStringLiteral("Stopped; the part downloaded is kept and the next download of this file resumes from it."));
        QVERIFY(!QFileInfo::exists(hub.destination()));
        QVERIFY(QFileInfo(part).size() > 0);
        hub.fixture.clearRequests();
        QVERIFY(hub.downloads.download(kFile));
        QVERIFY(hub.ended());
        QCOMPARE(hub.downloads.downloadMessage(), QStringLiteral("Downloaded and verified: %1").arg(hub.destination()));
        QVERIFY(hub.rangeAsked());
    }

    // A file whose bytes are not what the hub's listing says: refused, nothing left to pick up.
    void aWrongHashLeavesNoFile() {
        Hub hub;
        hub.fixture.wrongHash = true;
        QVERIFY(hub.listed());
        QVERIFY(hub.downloads.download(kFile));
        QVERIFY(hub.ended());
        QVERIFY2(hub.downloads.downloadMessage().startsWith(QStringLiteral("Not downloaded: ")), qPrintable(hub.downloads.downloadMessage()));
        QVERIFY(!QFileInfo::exists(hub.destination()));
    }

    void aHubThatIsNotThere() {
        Hub hub;
        catalog::HubOptions options;
        options.endpoint = "http://127.0.0.1:9";  // the discard port: nothing listens
        options.retries = 0;
        options.sleep = [](int) {};
        hub.downloads.setHubOptions(options);
        hub.downloads.search("stories");
        QTRY_VERIFY_WITH_TIMEOUT(!hub.downloads.browsing(), 20000);
        QVERIFY(!hub.downloads.browseError().isEmpty());
        QCOMPARE(hub.downloads.repos().size(), 0);
    }
};

QTEST_GUILESS_MAIN(TestModelDownloads)
#include "tst_model_downloads.moc"
