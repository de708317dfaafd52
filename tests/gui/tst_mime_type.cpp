// The MIME type the package installs (resources/desktop/inferscope-gguf.xml), read by Qt's own
// shared-mime-info parser: a .gguf name, or "GGUF" at offset 0 under any name, is application/x-gguf.
#include <QDir>
#include <QFile>
#include <QMimeDatabase>
#include <QTemporaryDir>
#include <QTest>

class TestMimeType : public QObject {
    Q_OBJECT
    QTemporaryDir dataDir_;  // <dir>/mime/packages/inferscope.xml, first in XDG_DATA_DIRS

private slots:
    void initTestCase() {
        QVERIFY(dataDir_.isValid());
        QVERIFY(QDir().mkpath(dataDir_.filePath("mime/packages")));
        QVERIFY(QFile::copy(QStringLiteral(INFERSCOPE_RESOURCES_DIR "/desktop/inferscope-gguf.xml"),
                            dataDir_.filePath("mime/packages/inferscope.xml")));
        // No mime.cache in our folder: Qt parses the XML itself. Before the first QMimeDatabase.
        qputenv("XDG_DATA_DIRS", (dataDir_.path() + ":/usr/local/share:/usr/share").toLocal8Bit());
    }

    void byName() {
        QMimeDatabase db;
        QCOMPARE(db.mimeTypeForFile(QStringLiteral("tinyllama.Q8_0.gguf"), QMimeDatabase::MatchExtension).name(),
                 QStringLiteral("application/x-gguf"));
        QVERIFY(db.mimeTypeForName(QStringLiteral("application/x-gguf")).comment().contains(QStringLiteral("GGUF")));
    }

    void byContent() {
        QMimeDatabase db;
        QFile model(QStringLiteral(INFERSCOPE_RESOURCES_DIR "/models/stories260K.gguf"));
        QVERIFY(model.open(QIODevice::ReadOnly));
        QCOMPARE(db.mimeTypeForData(model.read(64)).name(), QStringLiteral("application/x-gguf"));
        QVERIFY(db.mimeTypeForData(QByteArray("GGML not a gguf")).name() != QStringLiteral("application/x-gguf"));
    }
};

QTEST_GUILESS_MAIN(TestMimeType)
#include "tst_mime_type.moc"
