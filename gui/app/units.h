#pragma once
// Units: byte counts and counts as every panel prints them (the Model panel, the status bar, the
// KV-cache panel and calculator), so one figure reads the same everywhere. Exact bytes with digit
// groups ("131,072 B"), binary units as memory is allocated ("128 KiB", "15.6 GiB") and decimal
// units where the product speaks of GB ("16.8 GB"). Formatting only.

#include <QObject>
#include <QQmlEngine>
#include <QString>
#include <cstdint>

namespace inferscope {

QString exactBytes(uint64_t bytes);         // "16,777,216,000 B"
QString binaryBytes(uint64_t bytes);        // "15.6 GiB", "128 KiB", "3.62 MiB": 3 significant digits, trailing zeros dropped
QString decimalBytes(uint64_t bytes);       // "16.8 GB"
QString groupedCount(uint64_t n);           // "4,096"
QString dtypeLabel(const QString& dtype);   // "f16" → "FP16", "bf16" → "BF16", "int8" → "INT8"
// A piece of model or user text set inside one of our sentences (a token, a search), wrapped in
// Unicode's first-strong isolate (U+2068 … U+2069): a right-to-left token stays one run where it is
// written, and the sentence keeps its own direction instead of taking the token's.
QString isolated(const QString& text);

// For QML (numbers arrive as doubles, exact up to 2^53 bytes = 8 PiB).
class Units : public QObject {
    Q_OBJECT
    QML_ELEMENT
    QML_SINGLETON
public:
    using QObject::QObject;
    Q_INVOKABLE QString exact(double bytes) const { return exactBytes(uint64_t(bytes)); }
    Q_INVOKABLE QString binary(double bytes) const { return binaryBytes(uint64_t(bytes)); }
    Q_INVOKABLE QString decimal(double bytes) const { return decimalBytes(uint64_t(bytes)); }
    Q_INVOKABLE QString count(double n) const { return groupedCount(uint64_t(n)); }
    Q_INVOKABLE QString dtypeLabel(const QString& dtype) const { return inferscope::dtypeLabel(dtype); }
    Q_INVOKABLE QString isolate(const QString& text) const { return isolated(text); }
};

}  // namespace inferscope
