#pragma once
// HeatDocument: puts an answer's heat map into the chat's TextEdit — each token's characters with
// its tint as their background — through the TextEdit's QTextDocument, changing only the spans
// that changed. While an answer streams that is the new tokens' spans and the cursor: the whole
// answer as HTML ten times a second (parsed, its CSS read, laid out again) took the GUI thread
// more of a core than any panel. Also answers where a position of the text falls (the hover
// tooltip, a click, the selected token's outline) from the same heat map.

#include <QObject>
#include <QPointer>
#include <QQmlParserStatus>
#include <QQuickTextDocument>
#include <QtQml/qqmlregistration.h>

#include "chat/chat_model.h"

class QTextCursor;
class QTextDocument;

namespace inferscope {

class HeatDocument : public QObject, public QQmlParserStatus {
    Q_OBJECT
    Q_INTERFACES(QQmlParserStatus)
    QML_ELEMENT
    Q_PROPERTY(QQuickTextDocument* document READ document WRITE setDocument NOTIFY documentChanged)
    Q_PROPERTY(inferscope::ChatModel* model READ model WRITE setModel NOTIFY modelChanged)
    Q_PROPERTY(int row READ row WRITE setRow NOTIFY rowChanged)
    // The row's heatRevision (ChatModel): its heat map changed when this does; 0: none.
    Q_PROPERTY(int revision READ revision WRITE setRevision NOTIFY revisionChanged)
    Q_PROPERTY(bool streaming READ streaming WRITE setStreaming NOTIFY streamingChanged)  // ends in " ▍"

public:
    using QObject::QObject;

    QQuickTextDocument* document() const { return document_; }
    void setDocument(QQuickTextDocument* document);
    ChatModel* model() const { return model_; }
    void setModel(ChatModel* model);
    int row() const { return row_; }
    void setRow(int row);
    int revision() const { return revision_; }
    void setRevision(int revision);
    bool streaming() const { return streaming_; }
    void setStreaming(bool streaming);

    // The step whose characters include `position` of the text, -1 before the first.
    Q_INVOKABLE int stepAt(int position) const;
    // Where the step's characters start and end (the next step with characters of its own, or
    // the text's end); -1 for a step the heat map does not have.
    Q_INVOKABLE int stepStart(int step) const;
    Q_INVOKABLE int stepEnd(int step) const;

    // Writes `spans` at the cursor: line breaks as the text layout's ('\n' a new paragraph, the
    // others a line separator), one position per character of the plain text as tokenStarts
    // counts them (Qt's own insertText makes one paragraph of "\r\n").
    static void write(QTextCursor& cursor, const QList<HeatSpan>& spans);

    void classBegin() override { complete_ = false; }
    void componentComplete() override;

signals:
    void documentChanged();
    void modelChanged();
    void rowChanged();
    void revisionChanged();
    void streamingChanged();

private:
    void sync();

    QPointer<QQuickTextDocument> document_;
    QPointer<ChatModel> model_;
    int row_ = -1;
    int revision_ = 0;
    bool streaming_ = false;
    bool complete_ = true;
    bool writing_ = false;  // the document's changes are this one's
    QList<HeatSpan> shown_;  // what the document holds, the cursor included
    QList<int> tokenStarts_;
    int plainLength_ = 0;
};

}  // namespace inferscope
