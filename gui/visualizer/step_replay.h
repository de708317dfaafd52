#pragma once
// StepReplay (`StepInspector.replay` in QML): the selected answer's sampler run again with other
// settings on the logits each step kept (core/sampler/replay.h) — the settings, starting as the
// answer's own; whether the answer can be replayed and why not; and what the replay changed, run
// again once the settings rest (kReplayMs) and for each step selected. The Probabilities panel's
// replay box shows it; the chat's heat text marks the tokens it changed.

#include <QObject>
#include <QQmlEngine>
#include <QVariantList>
#include <optional>

#include "app/pacer.h"
#include "sampler/replay.h"

namespace inferscope {

class StepInspector;

class StepReplay : public QObject {
    Q_OBJECT
    QML_ANONYMOUS
    Q_PROPERTY(bool available READ available NOTIFY availabilityChanged)
    Q_PROPERTY(QString note READ note NOTIFY availabilityChanged)  // why no replay ("" when available)
    Q_PROPERTY(double temperature READ temperature WRITE setTemperature NOTIFY settingsChanged)
    Q_PROPERTY(int topK READ topK WRITE setTopK NOTIFY settingsChanged)
    Q_PROPERTY(double topP READ topP WRITE setTopP NOTIFY settingsChanged)
    Q_PROPERTY(double minP READ minP WRITE setMinP NOTIFY settingsChanged)
    Q_PROPERTY(double repeatPenalty READ repeatPenalty WRITE setRepeatPenalty NOTIFY settingsChanged)
    Q_PROPERTY(int changedCount READ changedCount NOTIFY resultChanged)
    Q_PROPERTY(int inexactCount READ inexactCount NOTIFY resultChanged)
    Q_PROPERTY(double minStoredMass READ minStoredMass NOTIFY resultChanged)
    Q_PROPERTY(QString error READ error NOTIFY resultChanged)
    Q_PROPERTY(QVariantMap current READ current NOTIFY resultChanged)  // the selected step replayed
    Q_PROPERTY(QVariantList candidates READ candidates NOTIFY resultChanged)

public:
    explicit StepReplay(StepInspector& inspector);
    void setPacerClock(PacerClock& clock) { pace_.setClock(clock); }

    bool available() const;
    QString note() const;
    double temperature() const { return settings_.temperature; }
    int topK() const { return settings_.topK; }
    double topP() const { return settings_.topP; }
    double minP() const { return settings_.minP; }
    double repeatPenalty() const { return settings_.repeatPenalty; }
    void setTemperature(double v);
    void setTopK(int v);
    void setTopP(double v);
    void setMinP(double v);
    void setRepeatPenalty(double v);
    int changedCount() const { return result_ ? result_->changed : 0; }
    int inexactCount() const { return result_ ? result_->inexact : 0; }
    double minStoredMass() const { return result_ ? result_->minStoredMass : 1.0; }
    QString error() const { return error_; }
    QVariantMap current() const;
    QVariantList candidates() const;

    // The settings start as the answer's own (the selection moved to another answer, or it finished).
    Q_INVOKABLE void resetToAnswer();
    // Another step of the same answer was selected: its replay, if one was shown.
    void followStep();

signals:
    void availabilityChanged();
    void settingsChanged();
    void resultChanged();

private:
    void schedule();
    void run();

    StepInspector& inspector_;
    SamplerParams settings_;
    std::optional<ReplayResult> result_;
    std::optional<SampleRecord> replayedStep_;
    QString error_;
    // The replay runs once the settings rest this long: a dragged slider replays when it stops,
    // not at every value it passes.
    static constexpr qint64 kReplayMs = 40;
    Pacer pace_{kReplayMs, [this] { run(); }};
};

}  // namespace inferscope
