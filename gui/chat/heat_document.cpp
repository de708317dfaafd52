#include "chat/heat_document.h"

#include <QTextCursor>
#include <QTextDocument>
#include <algorithm>

namespace inferscope {
namespace {

const HeatSpan kCursor{QStringLiteral(" \u258D"), {}};

qsizetype lengthOf(const QList<HeatSpan>& spans, qsizetype count) {
    qsizetype n = 0;
    for (qsizetype i = 0; i < count; ++i) n += spans[i].text.size();
    return n;
}

}  // namespace

void HeatDocument::write(QTextCursor& cursor, const QList<HeatSpan>& spans) {
    for (const HeatSpan& span : spans) {
        QTextCharFormat format;
        if (span.tint.isValid()) format.setBackground(span.tint);
        const QString& t = span.text;
        qsizetype from = 0;
        for (qsizetype k = 0; k <= t.size(); ++k) {
            // Characters QTextCursor::insertText would turn into a paragraph or a frame: one of
            // U+FDD0/U+FDD1 (a frame's start and end) in a model's output is shown as U+FFFD.
            const bool special = k < t.size() && (isLineBreak(t[k]) || t[k] == QChar(0xFDD0) || t[k] == QChar(0xFDD1));
            if (k < t.size() && !special) continue;
            if (k > from) cursor.insertText(t.mid(from, k - from), format);
            if (k < t.size()) {
                if (t[k] == QLatin1Char('\n')) cursor.insertBlock(QTextBlockFormat(), QTextCharFormat());
                else cursor.insertText(QString(isLineBreak(t[k]) ? QChar(QChar::LineSeparator) : QChar(QChar::ReplacementCharacter)), format);
            }
            from = k + 1;
        }
    }
}

void HeatDocument::setDocument(QQuickTextDocument* document) {
    if (document == document_) return;
    if (document_ && document_->textDocument()) document_->textDocument()->disconnect(this);
    document_ = document;
    shown_.clear();  // another document: written whole
    if (QTextDocument* doc = document_ ? document_->textDocument() : nullptr) {
        doc->setUndoRedoEnabled(false);
        // The TextEdit sets its document's text too (on its completion, from its empty `text`,
        // after this one wrote): what this wrote is gone, and is written again at once — not a
        // turn of the event loop later, when a frame or a reader could find the bubble empty.
        connect(doc, &QTextDocument::contentsChanged, this, [this] {
            if (writing_ || shown_.isEmpty()) return;
            shown_.clear();
            sync();
        });
    }
    emit documentChanged();
    sync();
}

void HeatDocument::setModel(ChatModel* model) {
    if (model == model_) return;
    model_ = model;
    emit modelChanged();
    sync();
}

void HeatDocument::setRow(int row) {
    if (row == row_) return;
    row_ = row;
    emit rowChanged();
    sync();
}

void HeatDocument::setRevision(int revision) {
    if (revision == revision_) return;
    revision_ = revision;
    emit revisionChanged();
    sync();
}

void HeatDocument::setStreaming(bool streaming) {
    if (streaming == streaming_) return;
    streaming_ = streaming;
    emit streamingChanged();
    sync();
}

void HeatDocument::componentComplete() {
    complete_ = true;
    sync();
}

void HeatDocument::sync() {
    if (!complete_ || !document_ || !document_->textDocument()) return;
    const HeatText* heat = model_ && revision_ > 0 ? model_->heatText(row_) : nullptr;
    QList<HeatSpan> wanted = heat ? heat->spans : QList<HeatSpan>();
    tokenStarts_ = heat ? heat->tokenStarts : QList<int>();
    plainLength_ = heat ? int(heat->plain.size()) : 0;
    if (heat && streaming_) wanted.append(kCursor);
    // The spans shown as they are stay; the first that changed and all after it are written again.
    qsizetype same = 0;
    while (same < shown_.size() && same < wanted.size() && shown_[same] == wanted[same]) ++same;
    if (same == shown_.size() && same == wanted.size()) return;
    QTextDocument* doc = document_->textDocument();
    QTextCursor cursor(doc);
    writing_ = true;
    cursor.beginEditBlock();
    cursor.setPosition(int(lengthOf(shown_, same)));
    cursor.movePosition(QTextCursor::End, QTextCursor::KeepAnchor);
    cursor.removeSelectedText();
    write(cursor, wanted.mid(same));
    cursor.endEditBlock();
    writing_ = false;
    shown_ = std::move(wanted);
}

int HeatDocument::stepAt(int position) const { return stepAtPosition(tokenStarts_, position); }

int HeatDocument::stepStart(int step) const { return step >= 0 && step < tokenStarts_.size() ? tokenStarts_[step] : -1; }

int HeatDocument::stepEnd(int step) const {
    const int start = stepStart(step);
    if (start < 0) return -1;
    // A token that brought only some bytes of a character has none of its own: it ends where the
    // step that completed the character does.
    auto it = std::upper_bound(tokenStarts_.begin() + step, tokenStarts_.end(), start);
    return it == tokenStarts_.end() ? plainLength_ : *it;
}

}  // namespace inferscope
