#include "settings/app_settings.h"

#include "app/file_dialogs.h"
#include "app/units.h"
#include "settings/heat_mode.h"
#include "kv_cache/kv_cache.h"

#include <QSettings>
#include <QUrl>
#include <QVariantMap>

namespace inferscope {
namespace {
constexpr int kMaxRecent = 8;

// A server entry ("http://host:port#model") without the user info an address may have carried:
// a password is never written to the settings (an older version's file is cleaned on reading).
QString withoutUserInfo(const QString& entry) {
    if (!entry.startsWith(QLatin1String("http://")) && !entry.startsWith(QLatin1String("https://"))) return entry;
    QUrl url(entry);
    if (url.userInfo().isEmpty()) return entry;
    url.setUserInfo(QString());
    return url.toString();
}

// Seconds between 1 and a day; anything else (garbage, 0, negative) is the default.
int timeoutSeconds(const QVariant& v, int fallback) {
    bool ok = false;
    const int s = v.toInt(&ok);
    return ok && s >= 1 && s <= 86'400 ? s : fallback;
}
}  // namespace

AppSettings::AppSettings(QObject* parent) : QObject(parent) {
    QSettings s;
    theme_ = s.value("ui/theme", theme_).toString();
    if (theme_ != QLatin1String("dark")) theme_ = QStringLiteral("light");
    const QStringList stored = s.value("models/recent").toStringList();
    for (const QString& entry : stored)
        if (const QString clean = withoutUserInfo(entry); !recent_.contains(clean)) recent_ << clean;
    if (recent_ != stored) s.setValue("models/recent", recent_);
    connectTimeout_ = timeoutSeconds(s.value("remote/connectTimeout"), connectTimeout_);
    firstByteTimeout_ = timeoutSeconds(s.value("remote/firstByteTimeout"), firstByteTimeout_);
    idleTimeout_ = timeoutSeconds(s.value("remote/idleTimeout"), idleTimeout_);
    geometry_ = s.value("ui/geometry").toRect();
    sidebar_ = s.value("ui/sidebar", sidebar_).toBool();
    inspector_ = s.value("ui/inspector", inspector_).toBool();
    inspectorTab_ = s.value("ui/inspectorTab", inspectorTab_).toString();
    welcomeSeen_ = s.value("ui/welcomeSeen", false).toBool();
    // A name this version does not know (a newer one's, or garbage) tints nothing rather than guessing.
    heatMode_ = heatModeName(heatModeFromName(s.value("chat/heatMode", heatMode_).toString()));
    // The same for the KV cache type: an unknown name loads the default f16.
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
    s.setValue("remote/connectTimeout", connectTimeout_);
    s.setValue("remote/firstByteTimeout", firstByteTimeout_);
    s.setValue("remote/idleTimeout", idleTimeout_);
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

void AppSettings::setRemoteTimeouts(int connectSeconds, int firstByteSeconds, int idleSeconds) {
    const int c = timeoutSeconds(connectSeconds, connectTimeout_), f = timeoutSeconds(firstByteSeconds, firstByteTimeout_),
              i = timeoutSeconds(idleSeconds, idleTimeout_);
    if (c == connectTimeout_ && f == firstByteTimeout_ && i == idleTimeout_) return;
    connectTimeout_ = c;
    firstByteTimeout_ = f;
    idleTimeout_ = i;
    save();
    emit remoteTimeoutsChanged();
}

void AppSettings::noteModelLoaded(const QString& given) {
    const QString path = withoutUserInfo(given);
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

KvType AppSettings::kvTypeValue() const { return parseKvType(kvType_.toStdString()).value_or(KvType::F16); }

QVariantList AppSettings::kvTypeChoices() const {
    QVariantList choices;
    for (KvType type : allKvTypes()) {
        const QString name = QString::fromLatin1(kvTypeName(type));
        choices << QVariantMap{{QStringLiteral("name"), name}, {QStringLiteral("label"), dtypeLabel(name)}};
    }
    return choices;
}

}  // namespace inferscope
