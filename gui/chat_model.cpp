#include "chat_model.h"

namespace inferscope {

int ChatModel::rowCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : int(messages_.size()); }

QVariant ChatModel::data(const QModelIndex& index, int role) const {
    if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid)) return {};
    const ChatMessage& m = messages_[size_t(index.row())];
    switch (role) {
        case Qt::DisplayRole:
        case TextRole: return m.text;
        case RoleRole: return m.role;
        case StreamingRole: return m.streaming;
        case FinishReasonRole: return m.finishReason;
        case StatsRole: return m.stats;
        case TokenCountRole: return int(m.tokens.size());
        case GeneratedCountRole: return int(m.steps.size());
        default: return {};
    }
}

QHash<int, QByteArray> ChatModel::roleNames() const {
    return {{RoleRole, "role"},
            {TextRole, "text"},
            {StreamingRole, "streaming"},
            {FinishReasonRole, "finishReason"},
            {StatsRole, "stats"},
            {TokenCountRole, "tokenCount"},
            {GeneratedCountRole, "generatedCount"}};
}

int ChatModel::append(ChatMessage message) {
    const int row = int(messages_.size());
    beginInsertRows({}, row, row);
    messages_.push_back(std::move(message));
    utf8_.emplace_back();
    endInsertRows();
    emit countChanged();
    return row;
}

void ChatModel::appendSteps(int row, const std::vector<StepRecord>& steps) {
    ChatMessage& m = messages_[size_t(row)];
    std::string added;
    for (const StepRecord& s : steps) {
        m.steps.push_back(s);
        m.streamedBytes += s.piece;
        added += utf8_[size_t(row)].push(s.piece);
    }
    if (m.trimLeadingSpace && m.text.isEmpty() && added.starts_with(' ')) added.erase(0, 1);
    m.text += QString::fromUtf8(added);
    const QModelIndex i = index(row);
    emit dataChanged(i, i, {TextRole, GeneratedCountRole});
}

void ChatModel::setTokens(int row, std::vector<int32_t> tokens) {
    messages_[size_t(row)].tokens = std::move(tokens);
    const QModelIndex i = index(row);
    emit dataChanged(i, i, {TokenCountRole});
}

void ChatModel::setStoreId(int row, qint64 id) { messages_[size_t(row)].storeId = id; }

void ChatModel::finish(int row, const QString& text, const QString& finishReason, const QVariantMap& stats) {
    ChatMessage& m = messages_[size_t(row)];
    m.text = text;
    m.streaming = false;
    m.finishReason = finishReason;
    m.stats = stats;
    m.streamedBytes.clear();
    utf8_[size_t(row)] = Utf8Stream();
    const QModelIndex i = index(row);
    emit dataChanged(i, i, {TextRole, StreamingRole, FinishReasonRole, StatsRole, GeneratedCountRole});
}

void ChatModel::setText(int row, const QString& text) {
    messages_[size_t(row)].text = text;
    const QModelIndex i = index(row);
    emit dataChanged(i, i, {TextRole});
}

void ChatModel::truncate(int rows) {
    if (rows >= int(messages_.size())) return;
    rows = std::max(0, rows);
    beginRemoveRows({}, rows, int(messages_.size()) - 1);
    messages_.resize(size_t(rows));
    utf8_.resize(size_t(rows));
    endRemoveRows();
    emit countChanged();
}

void ChatModel::reset(std::vector<ChatMessage> messages) {
    beginResetModel();
    messages_ = std::move(messages);
    utf8_.assign(messages_.size(), Utf8Stream());
    endResetModel();
    emit countChanged();
}

}  // namespace inferscope
