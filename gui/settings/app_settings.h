#pragma once
// AppSettings: what the app remembers between runs (QSettings): the last and recent models, the
// window's geometry, the theme and panel layout. Sampling has its own SamplingSettings.

#include <QObject>
#include <QQmlEngine>
#include <QRect>
#include <QStringList>
#include <QVariantList>

#include "app/qml_singleton.h"
#include "record/kv_type.h"

namespace inferscope {

class AppSettings : public QObject, public QmlSingleton<AppSettings> {
    Q_OBJECT
    QML_ELEMENT
    QML_SINGLETON
    Q_PROPERTY(QString theme READ theme WRITE setTheme NOTIFY changed)  // "light" | "dark"
    Q_PROPERTY(QString lastModel READ lastModel NOTIFY changed)
    Q_PROPERTY(QStringList recentModels READ recentModels NOTIFY changed)
    // The model bundled with the app ("" when absent), and the model menu's list: the recent
    // models, then the bundled one (always offered, though never recorded as recent).
    Q_PROPERTY(QString bundledModel READ bundledModel NOTIFY changed)
    Q_PROPERTY(QStringList modelChoices READ modelChoices NOTIFY changed)
    Q_PROPERTY(QRect windowGeometry READ windowGeometry WRITE setWindowGeometry NOTIFY changed)
    Q_PROPERTY(bool sidebarVisible READ sidebarVisible WRITE setSidebarVisible NOTIFY changed)
    Q_PROPERTY(bool inspectorVisible READ inspectorVisible WRITE setInspectorVisible NOTIFY changed)
    Q_PROPERTY(QString inspectorTab READ inspectorTab WRITE setInspectorTab NOTIFY changed)
    // How the chat tints answers: "probability" | "surprisal" | "entropy" | "replay" | "off"
    // (ChatModel::heatMode follows it, see AppGraph).
    Q_PROPERTY(QString heatMode READ heatMode WRITE setHeatMode NOTIFY heatModeChanged)
    // The KV cache's element type: "f32" | "f16" | "q8_0" | "q4_0" (kv_type.h), "f16" unless chosen. Every load uses it;
    // a change applies to the loaded model at once (AppGraph: EngineController::applyKvType).
    Q_PROPERTY(QString kvType READ kvType WRITE setKvType NOTIFY kvTypeChanged)
    // What Settings → KV cache offers, one {name, label} per core type in core's order (allKvTypes):
    // name as kvType takes it and the settings file keeps it (kvTypeName: "f16"), label as the window
    // shows a type everywhere (dtypeLabel: "FP16"). QML keeps no list of its own.
    Q_PROPERTY(QVariantList kvTypeChoices READ kvTypeChoices CONSTANT)
    // The first-run welcome (qml/controls/WelcomeDialog.qml) has been closed once.
    Q_PROPERTY(bool welcomeSeen READ welcomeSeen WRITE setWelcomeSeen NOTIFY changed)
    // A server's deadlines in seconds (remote/reply_guard.h): to connect, to the answer's first
    // byte, between two arrivals. Each 1 s … 1 day.
    Q_PROPERTY(int connectTimeout READ connectTimeout NOTIFY remoteTimeoutsChanged)
    Q_PROPERTY(int firstByteTimeout READ firstByteTimeout NOTIFY remoteTimeoutsChanged)
    Q_PROPERTY(int idleTimeout READ idleTimeout NOTIFY remoteTimeoutsChanged)
    // Why the file dialogs cannot open on this machine (a missing QML module), or "" (file_dialogs.h).
    Q_PROPERTY(QString fileDialogProblem READ fileDialogProblem NOTIFY changed)

public:
    // No default constructor: with one, Qt 6.4's QML_SINGLETON would build its own instance
    // instead of calling create().
    explicit AppSettings(QObject* parent);

    QString theme() const { return theme_; }
    void setTheme(const QString& theme);
    // This run only (not saved): --theme on the command line.
    void setSessionTheme(const QString& theme);
    // false: changes last for this run only (the --screenshot mode leaves the user's settings alone).
    void setPersistent(bool persistent) { persistent_ = persistent; }
    QString lastModel() const { return recent_.isEmpty() ? QString() : recent_.first(); }
    QStringList recentModels() const { return recent_; }
    // Puts a successfully loaded model first in the recent list (at most 8 entries; a server's
    // address without its user info).
    Q_INVOKABLE void noteModelLoaded(const QString& path);
    Q_INVOKABLE void forgetModel(const QString& path);
    QString bundledModel() const { return bundledModel_; }
    void setBundledModel(const QString& path) {
        bundledModel_ = path;
        emit changed();
    }
    QStringList modelChoices() const {
        QStringList all = recent_;
        if (!bundledModel_.isEmpty() && !all.contains(bundledModel_)) all << bundledModel_;
        return all;
    }
    QRect windowGeometry() const { return geometry_; }
    void setWindowGeometry(const QRect& r);
    bool sidebarVisible() const { return sidebar_; }
    void setSidebarVisible(bool v);
    bool inspectorVisible() const { return inspector_; }
    void setInspectorVisible(bool v);
    QString inspectorTab() const { return inspectorTab_; }
    void setInspectorTab(const QString& tab);
    QString heatMode() const { return heatMode_; }
    void setHeatMode(const QString& mode);
    QString kvType() const { return kvType_; }
    KvType kvTypeValue() const;  // the same, read by core (the setting only ever holds a name it reads)
    void setKvType(const QString& type);
    QVariantList kvTypeChoices() const;
    bool welcomeSeen() const { return welcomeSeen_; }
    void setWelcomeSeen(bool seen);
    // This run only (not saved): --screenshot shows no welcome.
    void setSessionWelcomeSeen(bool seen);
    int connectTimeout() const { return connectTimeout_; }
    int firstByteTimeout() const { return firstByteTimeout_; }
    int idleTimeout() const { return idleTimeout_; }
    Q_INVOKABLE void setRemoteTimeouts(int connectSeconds, int firstByteSeconds, int idleSeconds);
    QString fileDialogProblem() const { return fileDialogProblem_; }
    void setFileDialogProblem(const QString& problem) {
        fileDialogProblem_ = problem;
        emit changed();
    }
    // "Save as" starts here: suggestedSavePath() of file_dialogs.h.
    Q_INVOKABLE QString suggestedSavePath(const QString& title, const QString& suffix) const;

signals:
    void changed();
    void heatModeChanged();  // on its own: the chat must not follow every window move
    void kvTypeChanged();
    void remoteTimeoutsChanged();

private:
    void save();
    QString theme_ = QStringLiteral("light");
    QStringList recent_;
    QRect geometry_;
    bool sidebar_ = true;
    bool inspector_ = true;
    QString inspectorTab_ = QStringLiteral("settings");
    bool persistent_ = true;
    bool welcomeSeen_ = false;
    QString heatMode_ = QStringLiteral("probability");
    QString kvType_ = QStringLiteral("f16");  // half F32's memory and long-context decode reads; llama.cpp's default
    QString fileDialogProblem_;
    QString bundledModel_;
    int connectTimeout_ = 10, firstByteTimeout_ = 300, idleTimeout_ = 60;
};

}  // namespace inferscope
