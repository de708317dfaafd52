#pragma once
// ChatModel: the messages of the open conversation, for the chat view. Lives and changes on the
// GUI thread only. Each row keeps, besides its text, the tokens it put in the context and (for
// answers) the engine's per-token records, which the visualizer and the store use.

#include <QAbstractListModel>
#include <QVariantMap>
#include <QtQml/qqmlregistration.h>
#include <string>
#include <vector>

#include "engine/generation.h"
#include "tokenizer/utf8_stream.h"

namespace inferscope {

struct ChatMessage {
    qint64 storeId = 0;                 // row id in the ChatStore, 0 until saved
    QString role;                       // "user" or "assistant"
    QString text;
    bool streaming = false;
    QString finishReason;               // answers: "eos", "stop", "length", "context_full", "cancelled"
    QVariantMap stats;                  // per-message statistics (see ChatController)
    std::vector<int32_t> tokens;        // what this message contributed to the context
    std::vector<StepRecord> steps;      // answers: one record per generated token
    std::string streamedBytes;          // answers while streaming: the raw bytes so far
    bool trimLeadingSpace = false;      // chat answers: the first token's word-start space is not shown
};

class ChatModel : public QAbstractListModel {
    Q_OBJECT
    QML_ELEMENT
    QML_UNCREATABLE("ChatModel is owned by ChatController")
    Q_PROPERTY(int count READ count NOTIFY countChanged)
public:
    enum Role {
        RoleRole = Qt::UserRole + 1,  // "user" / "assistant"
        TextRole,
        StreamingRole,
        FinishReasonRole,
        StatsRole,
        TokenCountRole,               // tokens in the context from this message
        GeneratedCountRole,           // answers: tokens generated
    };
    Q_ENUM(Role)

    using QAbstractListModel::QAbstractListModel;

    int rowCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role) const override;
    QHash<int, QByteArray> roleNames() const override;
    int count() const { return int(messages_.size()); }

    const ChatMessage& at(int row) const { return messages_[size_t(row)]; }
    const std::vector<ChatMessage>& messages() const { return messages_; }
    int append(ChatMessage message);  // returns the new row
    // Streams steps into an answer: their bytes join the text (whole UTF-8 characters only).
    void appendSteps(int row, const std::vector<StepRecord>& steps);
    void setTokens(int row, std::vector<int32_t> tokens);
    void setStoreId(int row, qint64 id);
    // Ends streaming: the final text (stop strings cut), finish reason and statistics.
    void finish(int row, const QString& text, const QString& finishReason, const QVariantMap& stats);
    void setText(int row, const QString& text);
    void truncate(int rows);  // keep the first `rows` messages
    void reset(std::vector<ChatMessage> messages);

signals:
    void countChanged();

private:
    std::vector<ChatMessage> messages_;
    std::vector<Utf8Stream> utf8_;  // one per row (only answers being streamed use theirs)
};

}  // namespace inferscope
