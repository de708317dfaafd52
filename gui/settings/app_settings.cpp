#include "settings/app_settings.h"

#include "app/file_dialogs.h"
#include "chat/token_heatmap.h"
#include "kv_cache/kv_cache.h"

#include <QSettings>

namespace inferscope {
namespace {
constexpr int kMaxRecent = 8;
}  // namespace

AppSettings::AppSettings(QObject* parent) : QObject(parent) {
    QSettings s;
    theme_ = s.value("ui/theme", theme_).toString();
    if (theme_ != QLatin1String("dark")) theme_ = QStringLiteral("light");
    recent_ = s.value("models/recent").toStringList();
    geometry_ = s.value("ui/geometry").toRect();
    sidebar_ = s.value("ui/sidebar", sidebar_).toBool();
    inspector_ = s.value("ui/inspector", inspector_).toBool();
    inspectorTab_ = s.value("ui/inspectorTab", inspectorTab_).toString();
    welcomeSeen_ = s.value("ui/welcomeSeen", false).toBool();
    // A name this version does not know (a newer one's, or garbage) tints nothing rather than guessing.
    heatMode_ = heatModeName(heatModeFromName(s.value("chat/heatMode", heatMode_).toString()));
    // The same for the KV cache type: an unknown name loads the default f32.
    if (const QString kv = s.value("engine/kvType", kvType_).toString(); parseKvType(kv.toStdString())) kvType_ = kv;
}

void AppSettings::save() {
    if (!persistent_) {
        emit changed();
        return;
    }
    QSettings s;
    s.setValue("ui/theme", theme_);
    s.setValue("models/recent", recent_);
    s.setValue("ui/geometry", geometry_);
    s.setValue("ui/sidebar", sidebar_);
    s.setValue("ui/inspector", inspector_);
    s.setValue("ui/inspectorTab", inspectorTab_);
    s.setValue("chat/heatMode", heatMode_);
    s.setValue("engine/kvType", kvType_);
    emit changed();
}

void AppSettings::setTheme(const QString& theme) {
    const QString t = theme == QLatin1String("dark") ? QStringLiteral("dark") : QStringLiteral("light");
    if (t == theme_) return;
    theme_ = t;
    save();
}

void AppSettings::setSessionTheme(const QString& theme) {
    theme_ = theme == QLatin1String("dark") ? QStringLiteral("dark") : QStringLiteral("light");
    emit changed();
}

void AppSettings::noteModelLoaded(const QString& path) {
    recent_.removeAll(path);
    recent_.prepend(path);
    while (recent_.size() > kMaxRecent) recent_.removeLast();
    save();
}

void AppSettings::forgetModel(const QString& path) {
    if (recent_.removeAll(path) > 0) save();
}

void AppSettings::setWindowGeometry(const QRect& r) {
    if (r == geometry_) return;
    geometry_ = r;
    save();
}

void AppSettings::setSidebarVisible(bool v) {
    if (v == sidebar_) return;
    sidebar_ = v;
    save();
}

void AppSettings::setInspectorVisible(bool v) {
    if (v == inspector_) return;
    inspector_ = v;
    save();
}

void AppSettings::setInspectorTab(const QString& tab) {
    if (tab == inspectorTab_) return;
    inspectorTab_ = tab;
    save();
}

void AppSettings::setHeatMode(const QString& mode) {
    const QString m = heatModeName(heatModeFromName(mode));
    if (m == heatMode_) return;
    heatMode_ = m;
    save();
    emit heatModeChanged();
}

// Saved on its own, not by save(): a session value (--screenshot) must never be written.
void AppSettings::setWelcomeSeen(bool seen) {
    if (seen == welcomeSeen_) return;
    welcomeSeen_ = seen;
    if (persistent_) QSettings().setValue("ui/welcomeSeen", seen);
    emit changed();
}

void AppSettings::setSessionWelcomeSeen(bool seen) {
    if (seen == welcomeSeen_) return;
    welcomeSeen_ = seen;
    emit changed();
}

QString AppSettings::suggestedSavePath(const QString& title, const QString& suffix) const {
    return inferscope::suggestedSavePath(title, suffix);
}

}  // namespace inferscope

namespace inferscope {

void AppSettings::setKvType(const QString& type) {
    if (type == kvType_ || !parseKvType(type.toStdString())) return;
    kvType_ = type;
    save();
    emit kvTypeChanged();
}

}  // namespace inferscope
