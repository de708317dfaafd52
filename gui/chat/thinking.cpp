#include "chat/thinking.h"

#include <algorithm>

namespace inferscope {

ThinkingSplit splitThinking(const QString& text, bool streaming) {
    static const QString open = QStringLiteral("<think>"), close = QStringLiteral("</think>");
    ThinkingSplit out;
    qsizetype start = 0;
    while (start < text.size() && text[start].isSpace()) ++start;
    if (!text.mid(start, open.size()).startsWith(open)) {
        // While "<thi" streams it may still become the tag: nothing is shown yet rather than the
        // start of a tag that is then hidden.
        if (streaming && start < text.size() && open.startsWith(text.mid(start))) {
            out.present = true;
            out.answerStart = text.size();
        }
        return out;
    }
    out.present = true;
    const qsizetype inside = start + open.size();
    const qsizetype end = text.indexOf(close, inside);
    if (end < 0) {
        // The closing tag may be arriving: its first characters are not shown as thought.
        qsizetype shown = text.size();
        if (streaming)
            for (qsizetype k = std::min<qsizetype>(close.size() - 1, text.size() - inside); k > 0; --k)
                if (close.startsWith(text.right(k))) {
                    shown -= k;
                    break;
                }
        out.thinking = text.mid(inside, shown - inside).trimmed();
        out.answerStart = text.size();
        return out;
    }
    out.finished = true;
    out.thinking = text.mid(inside, end - inside).trimmed();
    qsizetype answer = end + close.size();
    while (answer < text.size() && text[answer].isSpace()) ++answer;
    out.answerStart = answer;
    return out;
}

}  // namespace inferscope
