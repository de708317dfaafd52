#pragma once
// KvUnits: byte counts as the KV-cache panel and calculator print them. Exact bytes with digit
// groups ("131,072 B"), binary units as the cache is allocated ("128 KiB", "15.6 GiB") and decimal
// units where the product speaks of GB ("16.8 GB"). Formatting only: the numbers come from the
// engine's KvCacheStats or core's computeKvFigures.

#include <QObject>
#include <QQmlEngine>
#include <QString>
#include <cstdint>

namespace inferscope {

QString kvExactBytes(uint64_t bytes);    // "16,777,216,000 B"
QString kvBinaryBytes(uint64_t bytes);   // "15.6 GiB": 3 significant digits, trailing zeros dropped
QString kvDecimalBytes(uint64_t bytes);  // "16.8 GB"
QString kvCount(uint64_t n);             // "4,096"
QString kvDtypeLabel(const QString& dtype);  // "f16" → "FP16", "bf16" → "BF16", "int8" → "INT8"

// For QML (numbers arrive as doubles, exact up to 2^53 bytes = 8 PiB).
class KvUnits : public QObject {
    Q_OBJECT
    QML_ELEMENT
    QML_SINGLETON
public:
    using QObject::QObject;
    Q_INVOKABLE QString exact(double bytes) const { return kvExactBytes(uint64_t(bytes)); }
    Q_INVOKABLE QString binary(double bytes) const { return kvBinaryBytes(uint64_t(bytes)); }
    Q_INVOKABLE QString decimal(double bytes) const { return kvDecimalBytes(uint64_t(bytes)); }
    Q_INVOKABLE QString count(double n) const { return kvCount(uint64_t(n)); }
    Q_INVOKABLE QString dtypeLabel(const QString& dtype) const { return kvDtypeLabel(dtype); }
};

}  // namespace inferscope
