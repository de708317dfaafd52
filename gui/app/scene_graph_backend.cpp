#include "app/scene_graph_backend.h"

#include <QOffscreenSurface>
#include <QOpenGLContext>
#include <QOpenGLFunctions>
#include <QQuickWindow>
#include <QSGRendererInterface>

namespace inferscope {

bool isSoftwareGlRenderer(const QString& glRenderer) {
    static const char* const kSoftware[] = {"llvmpipe", "softpipe", "swrast", "software rasterizer",
                                            "gdi generic", "svga3d"};
    for (const char* name : kSoftware)
        if (glRenderer.contains(QLatin1String(name), Qt::CaseInsensitive)) return true;
    return false;
}

QString probeGlRenderer() {
    QOpenGLContext context;
    if (!context.create()) return {};
    QOffscreenSurface surface;
    surface.setFormat(context.format());
    surface.create();
    if (!surface.isValid() || !context.makeCurrent(&surface)) return {};
    const auto* renderer = reinterpret_cast<const char*>(context.functions()->glGetString(GL_RENDERER));
    const QString name = renderer ? QString::fromLatin1(renderer) : QString();
    context.doneCurrent();
    return name;
}

QString chooseSceneGraphBackend(RendererChoice choice) {
    QString software;  // why Qt's software backend, or empty to keep Qt's default
    QString said;
    if (choice == RendererChoice::Software) {
        software = QStringLiteral("software rendering");
    } else if (choice == RendererChoice::Hardware) {
        said = QStringLiteral("Qt's default rendering");
    } else if (qEnvironmentVariableIsSet("QT_QUICK_BACKEND") || qEnvironmentVariableIsSet("QSG_RHI_BACKEND")) {
        said = QStringLiteral("rendering as the environment says (QT_QUICK_BACKEND / QSG_RHI_BACKEND)");
    } else if (const QString renderer = probeGlRenderer(); renderer.isEmpty()) {
        software = QStringLiteral("software rendering: no OpenGL context could be created");
    } else if (isSoftwareGlRenderer(renderer)) {
        software = QStringLiteral("software rendering: OpenGL here is a CPU rasterizer (%1)").arg(renderer);
    } else {
        said = QStringLiteral("hardware rendering: %1").arg(renderer);
    }
    if (software.isEmpty()) return said;
    QQuickWindow::setGraphicsApi(QSGRendererInterface::Software);
    return software;
}

}  // namespace inferscope
