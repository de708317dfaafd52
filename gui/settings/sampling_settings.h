#pragma once
// SamplingSettings: the sampler's parameters as the settings panel edits them, validated by the
// engine's own rules (validateSamplerParams), persisted with QSettings, with named presets.

#include <QObject>
#include <QQmlEngine>
#include <QStringList>

#include "record/sampler_params.h"
#include "app/qml_singleton.h"

namespace inferscope {

class SamplingSettings : public QObject, public QmlSingleton<SamplingSettings> {
    Q_OBJECT
    QML_ELEMENT
    QML_SINGLETON
    Q_PROPERTY(double temperature READ temperature WRITE setTemperature NOTIFY changed)
    Q_PROPERTY(int topK READ topK WRITE setTopK NOTIFY changed)
    Q_PROPERTY(double topP READ topP WRITE setTopP NOTIFY changed)
    Q_PROPERTY(double minP READ minP WRITE setMinP NOTIFY changed)
    Q_PROPERTY(double repeatPenalty READ repeatPenalty WRITE setRepeatPenalty NOTIFY changed)
    Q_PROPERTY(int repeatLastN READ repeatLastN WRITE setRepeatLastN NOTIFY changed)
    Q_PROPERTY(int seed READ seed WRITE setSeed NOTIFY changed)  // -1: a new seed for every answer
    Q_PROPERTY(int maxTokens READ maxTokens WRITE setMaxTokens NOTIFY changed)
    Q_PROPERTY(int threads READ threads WRITE setThreads NOTIFY changed)  // 0: one per core
    Q_PROPERTY(int topN READ topN WRITE setTopN NOTIFY changed)
    Q_PROPERTY(QString validationError READ validationError NOTIFY changed)
    Q_PROPERTY(bool valid READ valid NOTIFY changed)
    Q_PROPERTY(QStringList presetNames READ presetNames NOTIFY presetsChanged)
    Q_PROPERTY(QString currentPreset READ currentPreset NOTIFY changed)

public:
    // No default constructor: with one, Qt 6.4's QML_SINGLETON would build its own instance
    // instead of calling create().
    explicit SamplingSettings(QObject* parent);

    double temperature() const { return p_.temperature; }
    int topK() const { return p_.topK; }
    double topP() const { return p_.topP; }
    double minP() const { return p_.minP; }
    double repeatPenalty() const { return p_.repeatPenalty; }
    int repeatLastN() const { return p_.repeatLastN; }
    int seed() const { return seed_; }
    int maxTokens() const { return maxTokens_; }
    int threads() const { return threads_; }
    int topN() const { return p_.topN; }
    void setTemperature(double v);
    void setTopK(int v);
    void setTopP(double v);
    void setMinP(double v);
    void setRepeatPenalty(double v);
    void setRepeatLastN(int v);
    void setSeed(int v);
    void setMaxTokens(int v);
    void setThreads(int v);
    void setTopN(int v);

    // "" when every value is valid, else the first problem in the engine's words.
    QString validationError() const;
    bool valid() const { return validationError().isEmpty(); }

    // Parameters for one answer: a fixed seed, or a fresh one when seed is -1.
    SamplerParams params() const;

    QStringList presetNames() const;  // built-in presets first, then the user's
    QString currentPreset() const { return currentPreset_; }
    Q_INVOKABLE bool applyPreset(const QString& name);
    Q_INVOKABLE bool savePreset(const QString& name);    // false for an empty or built-in name
    Q_INVOKABLE bool deletePreset(const QString& name);  // built-ins cannot be deleted
    Q_INVOKABLE void resetDefaults();

signals:
    void changed();
    void presetsChanged();

private:
    void touch();  // persist, clear the preset name, notify
    void load();

    SamplerParams p_;
    int seed_ = -1;
    int maxTokens_ = 512;
    int threads_ = 0;
    QString currentPreset_;
};

}  // namespace inferscope
