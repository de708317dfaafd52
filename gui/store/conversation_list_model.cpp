#include "store/conversation_list_model.h"

#include <QSet>

namespace inferscope {

namespace {
constexpr int kSearchHitLimit = 200;  // message hits read per search; several may share a conversation
}

ConversationListModel::ConversationListModel(QObject* parent) : QAbstractListModel(parent) {}

void ConversationListModel::setStore(ChatStore* store) {
    if (store_ == store) return;
    if (store_) QObject::disconnect(store_, nullptr, this, nullptr);
    store_ = store;
    if (store_) {
        connect(store_, &ChatStore::conversationsChanged, this, &ConversationListModel::refresh);
        connect(store_, &QObject::destroyed, this, [this] { applyRows({}); });
    }
    refresh();
    emit storeChanged();
}

void ConversationListModel::setFilter(const QString& filter) {
    if (filter_ == filter) return;
    filter_ = filter;
    refresh();
    emit filterChanged();
}

int ConversationListModel::rowCount(const QModelIndex& parent) const {
    return parent.isValid() ? 0 : int(rows_.size());
}

QVariant ConversationListModel::data(const QModelIndex& index, int role) const {
    if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid)) return {};
    const Row& row = rows_[index.row()];
    switch (role) {
    case Qt::DisplayRole:
    case TitleRole: return row.title;
    case ConversationIdRole: return row.id;
    case CreatedAtRole: return row.createdAt;
    case UpdatedAtRole: return row.updatedAt;
    case MessageCountRole: return row.messageCount;
    case ModelNameRole: return row.modelName;
    case SnippetRole: return row.snippet;
    case MatchMessageIdRole: return row.matchMessageId;
    case MatchVersionRole: return row.matchVersion;
    default: return {};
    }
}

QHash<int, QByteArray> ConversationListModel::roleNames() const {
    return {{ConversationIdRole, "conversationId"}, {TitleRole, "title"},
            {CreatedAtRole, "createdAt"},           {UpdatedAtRole, "updatedAt"},
            {MessageCountRole, "messageCount"},     {ModelNameRole, "modelName"},
            {SnippetRole, "snippet"},               {MatchMessageIdRole, "matchMessageId"},
            {MatchVersionRole, "matchVersion"}};
}

int ConversationListModel::indexOfConversation(qint64 conversationId) const {
    for (qsizetype i = 0; i < rows_.size(); ++i)
        if (rows_[i].id == conversationId) return int(i);
    return -1;
}

void ConversationListModel::refresh() {
    applyRows(readRows());
}

QList<ConversationListModel::Row> ConversationListModel::readRows() const {
    if (!store_ || !store_->isOpen()) return {};
    const auto toRow = [](const StoredConversation& c) {
        Row row;
        row.id = c.id;
        row.title = c.title;
        row.createdAt = c.createdAt;
        row.updatedAt = c.updatedAt;
        row.messageCount = c.messageCount;
        row.modelName = c.modelName;
        return row;
    };
    const QList<StoredConversation> all = store_->conversations();
    QList<Row> rows;
    const QString filter = filter_.trimmed();
    if (filter.isEmpty()) {
        for (const StoredConversation& c : all) rows.append(toRow(c));
        return rows;
    }
    QHash<qint64, qsizetype> byId;
    for (qsizetype i = 0; i < all.size(); ++i) byId.insert(all[i].id, i);
    QSet<qint64> listed;
    for (const StoredConversation& c : all) {
        if (c.title.contains(filter, Qt::CaseInsensitive)) {
            rows.append(toRow(c));
            listed.insert(c.id);
        }
    }
    for (const SearchHit& hit : store_->search(filter, kSearchHitLimit)) {
        const auto it = byId.constFind(hit.conversationId);
        if (it == byId.constEnd() || listed.contains(hit.conversationId)) continue;
        Row row = toRow(all[*it]);
        row.snippet = hit.snippet;
        row.matchMessageId = hit.messageId;
        row.matchVersion = hit.versionIndex;
        rows.append(row);
        listed.insert(hit.conversationId);
    }
    return rows;
}

// Turns rows_ into next with the fewest simple steps: remove the rows that went, then walk next
// in order, moving rows up that are further down, inserting new ones, updating changed ones.
void ConversationListModel::applyRows(const QList<Row>& next) {
    const int countBefore = rowCount();
    QSet<qint64> nextIds;
    for (const Row& row : next) nextIds.insert(row.id);
    for (qsizetype i = rows_.size() - 1; i >= 0; --i) {
        if (nextIds.contains(rows_[i].id)) continue;
        beginRemoveRows({}, int(i), int(i));
        rows_.removeAt(i);
        endRemoveRows();
    }
    for (qsizetype i = 0; i < next.size(); ++i) {
        if (i >= rows_.size() || rows_[i].id != next[i].id) {
            qsizetype from = -1;
            for (qsizetype j = i + 1; j < rows_.size() && from < 0; ++j)
                if (rows_[j].id == next[i].id) from = j;
            if (from >= 0) {
                beginMoveRows({}, int(from), int(from), {}, int(i));
                rows_.move(from, i);
                endMoveRows();
            } else {
                beginInsertRows({}, int(i), int(i));
                rows_.insert(i, next[i]);
                endInsertRows();
                continue;
            }
        }
        if (!(rows_[i] == next[i])) {
            rows_[i] = next[i];
            emit dataChanged(index(int(i)), index(int(i)));
        }
    }
    if (rowCount() != countBefore) emit countChanged();
}

}  // namespace inferscope
