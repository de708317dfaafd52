#pragma once
// SpeculativeSettings: Settings → Speculative decoding — off, prompt lookup (n-gram drafts, no
// second model) or a draft model file of the same vocabulary, and k, the most tokens drafted per
// round. Persisted with QSettings like the sampler's settings. ChatController gives each answer on
// a backend that drafts (BackendAbilities::drafts) these choices (GenerationJob::speculative); the
// engine's worker loads the draft model and checks its vocabulary, and says so when it cannot.

#include <QObject>
#include <QQmlEngine>
#include <QString>

#include "app/qml_singleton.h"

namespace inferscope {

class SpeculativeSettings : public QObject, public QmlSingleton<SpeculativeSettings> {
    Q_OBJECT
    QML_ELEMENT
    QML_SINGLETON
    Q_PROPERTY(Mode mode READ mode WRITE setMode NOTIFY changed)
    Q_PROPERTY(int maxDraft READ maxDraft WRITE setMaxDraft NOTIFY changed)  // k: tokens drafted per round, 1 to 16
    // The draft model (Mode::DraftModel): a GGUF path; a file:// URL is taken as its path.
    Q_PROPERTY(QString draftModel READ draftModel WRITE setDraftModel NOTIFY changed)
    // Why the choice cannot run ("" when it can, or when off): no draft model chosen, or not found.
    Q_PROPERTY(QString problem READ problem NOTIFY changed)

public:
    enum class Mode { Off, PromptLookup, DraftModel };
    Q_ENUM(Mode)
    static constexpr int kMaxDraft = 16;  // the engine's limit
    static constexpr int kNgramMax = 4;   // prompt lookup: the longest end of the text looked up

    // No default constructor: with one, Qt 6.4's QML_SINGLETON would build its own instance.
    explicit SpeculativeSettings(QObject* parent);

    Mode mode() const { return mode_; }
    void setMode(Mode mode);
    int maxDraft() const { return maxDraft_; }
    void setMaxDraft(int k);
    QString draftModel() const { return draftModel_; }
    void setDraftModel(const QString& pathOrUrl);
    QString problem() const;
    bool enabled() const { return mode_ != Mode::Off; }

signals:
    void changed();

private:
    void save();
    Mode mode_ = Mode::Off;
    int maxDraft_ = 4;
    QString draftModel_;
};

}  // namespace inferscope
