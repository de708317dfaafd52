// ModelDownloads against the hub fixture on 127.0.0.1 (tests/support/hub_fixture.h): a search, a
// repository's files with the fit read from each header, a download cut at 40% that resumes and
// is verified, one stopped by the person and resumed later (in this run or the next), one whose
// hash is not the hub's, a disk without room, and a gated repository opened by a typed token.
#include <QFile>
#include <QFileInfo>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTest>

#include "catalog/model_summary.h"
#include "common/memory_budget.h"
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
    catalog::HubOptions options;

    Hub() {
        fixture.addFile(kRepo, kFile, model);
        catalog::Environment env;
        env.home = home.path().toStdString();
        env.systemOllamaModels = env.home + "/system-ollama";
        library.setEnvironment(env);
        options.endpoint = fixture.endpoint();
        options.stallTimeoutSeconds = 60;  // a stall lasts until the test stops the download
        options.sleep = [](int) {};  // retries do not wait
        downloads.setHubOptions(options);
    }
    QString destination() const {
        return QString::fromStdString(catalog::downloadDestination(catalog::inferscopeModelsFolder(library.environment()), kRepo, kFile).string());
    }
    QString part() const { return QString::fromStdString(catalog::partialFileOf(destination().toStdString()).string()); }
    bool listed() { return listedBy(downloads); }
    static bool listedBy(ModelDownloads& d, const char* repo = kRepo) {
        d.listFiles(repo);
        return QTest::qWaitFor([&] { return !d.browsing() && (!fileAt(d, 0, "fit").isEmpty() || !d.browseError().isEmpty()); }, 20000);
    }
    bool ended() { return endedFor(downloads); }
    static bool endedFor(ModelDownloads& d) { return QTest::qWaitFor([&] { return !d.downloading(); }, 30000); }
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
        const QString part = hub.part();
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

    // Stopped, then the app closed: the next run's list says how much is here, and the download
    // goes on from there (a Range from the kept byte), verified.
    void aPartKeptAcrossARestartIsResumed() {
        Hub hub;
        QVERIFY(hub.listed());
        QCOMPARE(hub.downloads.files().first().toMap()["kept"].toDouble(), 0.0);
        hub.fixture.stallNext = true;  // 10% arrives, then nothing
        QVERIFY(hub.downloads.download(kFile));
        QTRY_VERIFY_WITH_TIMEOUT(QFileInfo(hub.part()).size() > 0, 20000);
        hub.downloads.cancelDownload();
        QVERIFY(hub.ended());
        const qint64 kept = QFileInfo(hub.part()).size();
        QCOMPARE(kept, qint64(hub.model.size() / 10));
        QCOMPARE(hub.downloads.files().first().toMap()["kept"].toDouble(), double(kept));  // said at once

        // The next run: new objects over the same home and models folder.
        ModelLibrary library{nullptr};
        library.setEnvironment(hub.library.environment());
        ModelDownloads again{&library, nullptr};
        again.setHubOptions(hub.options);
        QVERIFY(Hub::listedBy(again));
        QVariantMap row = again.files().first().toMap();
        QCOMPARE(row["kept"].toDouble(), double(kept));
        QCOMPARE(row["downloaded"].toBool(), false);
        QCOMPARE(row["room"].toString(), QString());
        hub.fixture.clearRequests();
        QSignalSpy done(&again, &ModelDownloads::downloaded);
        QVERIFY(again.download(kFile));
        QVERIFY(Hub::endedFor(again));
        QCOMPARE(again.downloadMessage(), QStringLiteral("Downloaded and verified: %1").arg(hub.destination()));
        QCOMPARE(done.count(), 1);
        int fromKept = 0;
        for (const auto& r : hub.fixture.requests())
            if (r.listener == "cdn") fromKept += r.range == "bytes=" + std::to_string(kept) + "-";
        QCOMPARE(fromKept, 1);
        QFile f(hub.destination());
        QVERIFY(f.open(QIODevice::ReadOnly));
        QCOMPARE(f.readAll().toStdString(), hub.model);
        // The row now opens the file.
        row = again.files().first().toMap();
        QCOMPARE(row["downloaded"].toBool(), true);
        QCOMPARE(row["localPath"].toString(), hub.destination());
        QCOMPARE(row["kept"].toDouble(), 0.0);
    }

    // A disk without room for the file: the row says so before anything is asked, and a download
    // tried anyway writes nothing.
    void noRoomOnTheDisk() {
        Hub hub;
        hub.downloads.setFreeSpaceProbe([](const std::filesystem::path&) { return std::optional<uint64_t>(uint64_t(1) << 20); });
        QVERIFY(hub.listed());
        const QString needs = QString::fromStdString(formatBytes(hub.model.size() + catalog::kDiskMargin));
        const QString oneMiB = QString::fromStdString(formatBytes(uint64_t(1) << 20));
        QCOMPARE(fileAt(hub.downloads, 0, "room"), QStringLiteral("Not enough disk space: it needs %1, %2 free").arg(needs, oneMiB));
        QVERIFY(hub.downloads.download(kFile));
        QVERIFY(hub.ended());
        QCOMPARE(hub.downloads.downloadMessage(),
                 QStringLiteral("Not downloaded: not enough disk space for %1/%2: it needs %3, %4 has %5 free")
                     .arg(kRepo, kFile, needs, QFileInfo(hub.destination()).absolutePath(), oneMiB));
        QVERIFY(!QFileInfo::exists(hub.part()));
        QVERIFY(!QFileInfo::exists(hub.destination()));
    }

    // A gated repository: what to do, its page, and the token typed in the tab opens it; a token
    // it does not accept is said to be refused; forgetting the token closes it again.
    void aGatedRepositoryOpensToTheTokenTyped() {
        Hub hub;
        hub.fixture.addGatedRepo("meta/gated-GGUF", "hf_accepted");
        hub.fixture.addFile("meta/gated-GGUF", kFile, hub.model);
        QCOMPARE(hub.downloads.tokenSource(), QString());
        QVERIFY(Hub::listedBy(hub.downloads, "meta/gated-GGUF"));
        const QString gated = QStringLiteral("meta/gated-GGUF is gated (HTTP 403): accept its conditions on its page on the hub, then set the "
                                             "Hugging Face token below to a token of that account");
        QCOMPARE(hub.downloads.browseError(), gated);
        QCOMPARE(hub.downloads.deniedPage(), QString::fromStdString(hub.fixture.endpoint()) + QStringLiteral("/meta/gated-GGUF"));
        QCOMPARE(hub.downloads.files().size(), 0);

        hub.downloads.setToken(QStringLiteral("hf_someone_else"), false);
        QCOMPARE(hub.downloads.tokenSource(), QStringLiteral("session"));
        QVERIFY(Hub::listedBy(hub.downloads, "meta/gated-GGUF"));
        QCOMPARE(hub.downloads.browseError(), gated + QStringLiteral(" (the one set was refused)"));

        hub.downloads.setToken(QStringLiteral("  hf_accepted "), true);
        QCOMPARE(hub.downloads.tokenSource(), QStringLiteral("keyring"));
        QCOMPARE(hub.downloads.tokenProblem(), QString());
        QVERIFY(Hub::listedBy(hub.downloads, "meta/gated-GGUF"));
        QCOMPARE(hub.downloads.browseError(), QString());
        QCOMPARE(hub.downloads.deniedPage(), QString());
        QCOMPARE(fileAt(hub.downloads, 0, "path"), QString(kFile));
        // Sent to the hub only: the file's bytes come from the CDN without it.
        for (const auto& r : hub.fixture.requests())
            if (r.listener == "cdn") QVERIFY2(!r.token, r.target.c_str());

        hub.downloads.setToken(QString(), false);
        QCOMPARE(hub.downloads.tokenSource(), QString());
        QVERIFY(Hub::listedBy(hub.downloads, "meta/gated-GGUF"));
        QCOMPARE(hub.downloads.browseError(), gated);
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
