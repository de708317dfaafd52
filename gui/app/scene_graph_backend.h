#pragma once
// Which Qt Quick scene-graph backend the app renders with. On a machine without a GPU, OpenGL is
// Mesa's llvmpipe: it rasterizes the whole window on the CPU at every frame, with threads of its
// own, and on 2 cores that took 40% of decode speed (bench/gui_vs_cli.sh: 39.7 tokens/s in the app
// against 69.5 in inferscope-cli). Qt's software backend repaints only what changed. So: a
// hardware OpenGL driver keeps OpenGL; a software rasterizer, or no OpenGL at all, gets Qt's
// software backend. QT_QUICK_BACKEND or QSG_RHI_BACKEND set by the user are respected.
#include <QString>

namespace inferscope {

enum class RendererChoice { Auto, Software, Hardware };

// True for the renderer strings of CPU rasterizers (llvmpipe, softpipe, swrast, Microsoft's and
// VMware's software renderers).
bool isSoftwareGlRenderer(const QString& glRenderer);

// The GL_RENDERER of a context the default platform can create, or an empty string when none can
// be created (the offscreen platform, no GL driver).
QString probeGlRenderer();

// Sets the backend for every QQuickWindow to come (call after the QGuiApplication, before the first
// window) and returns a one-line description of the choice and why.
QString chooseSceneGraphBackend(RendererChoice choice);

}  // namespace inferscope
