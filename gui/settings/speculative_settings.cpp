#include "settings/speculative_settings.h"

#include <QFileInfo>
#include <QSettings>
#include <QUrl>
#include <algorithm>

namespace inferscope {

SpeculativeSettings::SpeculativeSettings(QObject* parent) : QObject(parent) {
    QSettings s;
    s.beginGroup("speculative");
    const int mode = s.value("mode", 0).toInt();
    mode_ = mode >= 0 && mode <= int(Mode::DraftModel) ? Mode(mode) : Mode::Off;
    maxDraft_ = std::clamp(s.value("maxDraft", maxDraft_).toInt(), 1, kMaxDraft);
    draftModel_ = s.value("draftModel").toString();
}

void SpeculativeSettings::save() {
    QSettings s;
    s.beginGroup("speculative");
    s.setValue("mode", int(mode_));
    s.setValue("maxDraft", maxDraft_);
    s.setValue("draftModel", draftModel_);
    emit changed();
}

void SpeculativeSettings::setMode(Mode mode) {
    if (mode == mode_ || int(mode) < 0 || int(mode) > int(Mode::DraftModel)) return;
    mode_ = mode;
    save();
}

void SpeculativeSettings::setMaxDraft(int k) {
    k = std::clamp(k, 1, kMaxDraft);
    if (k == maxDraft_) return;
    maxDraft_ = k;
    save();
}

void SpeculativeSettings::setDraftModel(const QString& pathOrUrl) {
    const QUrl url(pathOrUrl);
    const QString path = url.isLocalFile() ? url.toLocalFile() : pathOrUrl.trimmed();
    if (path == draftModel_) return;
    draftModel_ = path;
    save();
}

QString SpeculativeSettings::problem() const {
    if (mode_ != Mode::DraftModel) return {};
    if (draftModel_.isEmpty()) return tr("Choose a draft model: a GGUF file with the same vocabulary as the model.");
    if (!QFileInfo(draftModel_).isFile()) return tr("The draft model %1 is not found.").arg(draftModel_);
    return {};
}

}  // namespace inferscope
