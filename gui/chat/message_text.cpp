#include "chat/message_text.h"

namespace inferscope {

int64_t utf8Length(QStringView text) {
    int64_t n = 0;
    for (qsizetype i = 0; i < text.size(); ++i) {
        const char16_t c = text[i].unicode();
        if (c < 0x80) n += 1;
        else if (c < 0x800) n += 2;
        else if (QChar::isHighSurrogate(c) && i + 1 < text.size() && QChar::isLowSurrogate(text[i + 1].unicode())) n += 4, ++i;
        else n += 3;  // a lone surrogate becomes U+FFFD (3 bytes)
    }
    return n;
}

QString wellFormed(QString text) {
    if (text.isValidUtf16()) return text;
    for (qsizetype i = 0; i < text.size(); ++i) {
        if (text[i].isHighSurrogate() && i + 1 < text.size() && text[i + 1].isLowSurrogate()) ++i;
        else if (text[i].isSurrogate()) text[i] = QChar::ReplacementCharacter;
    }
    return text;
}

QString firstLine(const QString& text, int max) {
    QString t = text.simplified();
    if (t.size() > max) t = t.left(max - 1) + QChar(0x2026);
    return t;
}

}  // namespace inferscope
