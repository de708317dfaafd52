// The scene-graph backend choice (gui/app/scene_graph_backend.h): CPU rasterizers recognised by name,
// the choice following what this machine's OpenGL is, and the app's --renderer option.
#include <QGuiApplication>
#include <QProcess>
#include <QQuickWindow>
#include <QSGRendererInterface>
#include <QTest>

#include "app/scene_graph_backend.h"

using namespace inferscope;

class TestSceneGraphBackend : public QObject {
    Q_OBJECT
private slots:
    void softwareRenderersAreRecognised_data() {
        QTest::addColumn<QString>("renderer");
        QTest::addColumn<bool>("software");
        QTest::newRow("llvmpipe") << "llvmpipe (LLVM 15.0.6, 256 bits)" << true;
        QTest::newRow("softpipe") << "softpipe" << true;
        QTest::newRow("swrast") << "Mesa X11 swrast" << true;
        QTest::newRow("windows") << "GDI Generic" << true;
        QTest::newRow("vmware") << "SVGA3D; build: RELEASE;  LLVM;" << true;
        QTest::newRow("intel") << "Mesa Intel(R) UHD Graphics 620 (KBL GT2)" << false;
        QTest::newRow("amd") << "AMD Radeon RX 6600 (navi23, LLVM 15.0.6, DRM 3.49, 6.1.0-13-amd64)" << false;
        QTest::newRow("nvidia") << "NVIDIA GeForce RTX 3060/PCIe/SSE2" << false;
    }
    void softwareRenderersAreRecognised() {
        QFETCH(QString, renderer);
        QFETCH(bool, software);
        QCOMPARE(isSoftwareGlRenderer(renderer), software);
    }

    // Whatever OpenGL this machine has (none under the offscreen platform), the choice follows it.
    void autoFollowsThisMachinesOpenGl() {
        qunsetenv("QT_QUICK_BACKEND");
        qunsetenv("QSG_RHI_BACKEND");
        const QString renderer = probeGlRenderer();
        const QString said = chooseSceneGraphBackend(RendererChoice::Auto);
        const bool software = renderer.isEmpty() || isSoftwareGlRenderer(renderer);
        QCOMPARE(QQuickWindow::sceneGraphBackend() == QLatin1String("software"), software);
        QVERIFY2(said.startsWith(software ? QLatin1String("software rendering") : QLatin1String("hardware rendering")), qPrintable(said));
        if (!renderer.isEmpty()) QVERIFY2(said.contains(renderer), qPrintable(said));
    }

    void theAppRefusesAnUnknownRenderer() {
        QProcess app;
        app.start(QStringLiteral(INFERSCOPE_APP), {QStringLiteral("--renderer"), QStringLiteral("vulkan")});
        QVERIFY(app.waitForFinished(30000));
        QCOMPARE(app.exitCode(), 1);
        QCOMPARE(QString::fromUtf8(app.readAllStandardError()).trimmed().split(QLatin1Char('\n')).last(),
                 QStringLiteral("inferscope: --renderer must be auto, software or hardware, got \"vulkan\""));
    }
};

int main(int argc, char** argv) {
    QGuiApplication app(argc, argv);
    TestSceneGraphBackend test;
    return QTest::qExec(&test, argc, argv);
}

#include "tst_scene_graph_backend.moc"
