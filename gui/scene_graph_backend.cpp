#include "scene_graph_backend.h"

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
    if (choice == RendererChoice::Auto) {
        if (qEnvironmentVariableIsSet("QT_QUICK_BACKEND") || qEnvironmentVariableIsSet("QSG_RHI_BACKEND"))
            return QStringLiteral("rendering as the environment says (QT_QUICK_BACKEND / QSG_RHI_BACKEND)");
        const QString renderer = probeGlRenderer();
        if (renderer.isEmpty()) {
            QQuickWindow::setGraphicsApi(QSGRendererInterface::Software);
            return QStringLiteral("software rendering: no OpenGL context could be created");
        }
        if (isSoftwareGlRenderer(renderer)) {
            QQuickWindow::setGraphicsApi(QSGRendererInterface::Software);
            return QStringLiteral("software rendering: OpenGL here is a CPU rasterizer (%1)").arg(renderer);
        }
        return QStringLiteral("hardware rendering: %1").arg(renderer);
    }
    if (choice == RendererChoice::Software) {
        QQuickWindow::setGraphicsApi(QSGRendererInterface::Software);
        return QStringLiteral("software rendering");
    }
    return QStringLiteral("Qt's default rendering");
}

}  // namespace inferscope
