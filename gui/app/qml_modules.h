#pragma once
// Every QML module of the app (gui/CMakeLists.txt) is a static library with a static plugin: an
// executable that makes a QML engine imports them all. Include this once, in its main file.

#include <QtQml/qqmlextensionplugin.h>

Q_IMPORT_QML_PLUGIN(Inferscope_BasePlugin)
Q_IMPORT_QML_PLUGIN(Inferscope_StorePlugin)
Q_IMPORT_QML_PLUGIN(Inferscope_EnginePlugin)
Q_IMPORT_QML_PLUGIN(Inferscope_LibraryPlugin)
Q_IMPORT_QML_PLUGIN(Inferscope_ChatPlugin)
Q_IMPORT_QML_PLUGIN(Inferscope_VisualizerPlugin)
Q_IMPORT_QML_PLUGIN(InferscopePlugin)
