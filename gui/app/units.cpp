#include "app/units.h"

#include <QLocale>
#include <array>

namespace inferscope {
namespace {

// value / base^k with the largest unit that keeps it ≥ 1, 3 significant digits.
QString scaled(uint64_t bytes, double base, const std::array<const char*, 6>& units) {
    double v = double(bytes);
    size_t u = 0;
    while (v >= base && u + 1 < units.size()) {
        v /= base;
        ++u;
    }
    if (u == 0) return QStringLiteral("%1 %2").arg(bytes).arg(QLatin1String(units[0]));
    QString digits = QString::number(v, 'f', v >= 100 ? 0 : v >= 10 ? 1 : 2);
    if (digits.contains(QLatin1Char('.'))) {
        while (digits.endsWith(QLatin1Char('0'))) digits.chop(1);
        if (digits.endsWith(QLatin1Char('.'))) digits.chop(1);
    }
    return digits + QLatin1Char(' ') + QLatin1String(units[u]);
}

}  // namespace

QString groupedCount(uint64_t n) { return QLocale(QLocale::English, QLocale::UnitedStates).toString(qulonglong(n)); }

QString dtypeLabel(const QString& dtype) {
    if (dtype == QStringLiteral("f32")) return QStringLiteral("FP32");
    if (dtype == QStringLiteral("f16")) return QStringLiteral("FP16");
    return dtype.toUpper();  // BF16, INT8
}

QString exactBytes(uint64_t bytes) { return groupedCount(bytes) + QStringLiteral(" B"); }

QString binaryBytes(uint64_t bytes) { return scaled(bytes, 1024.0, {"B", "KiB", "MiB", "GiB", "TiB", "PiB"}); }

QString decimalBytes(uint64_t bytes) { return scaled(bytes, 1000.0, {"B", "kB", "MB", "GB", "TB", "PB"}); }

QString isolated(const QString& text) { return QChar(0x2068) + text + QChar(0x2069); }

}  // namespace inferscope
