#pragma once
// ConversationListModel: the sidebar's list over a ChatStore. With an empty filter, every
// conversation, most recently updated first; with a filter, the conversations whose title
// contains it, then those with messages matching it (FTS5, best first) with a snippet of the
// best match. Follows ChatStore::conversationsChanged with row-level changes (inserts, moves,
// removes, dataChanged; never a reset), so a view keeps its selection and scroll position.
//
//   ConversationListModel { store: appChatStore; filter: searchField.text }
//
// Threading: GUI thread only, like the store.

#include <QAbstractListModel>
#include <QDateTime>
#include <QPointer>
#include <QtQml/qqmlregistration.h>

#include "store/chat_store.h"

namespace inferscope {

class ConversationListModel : public QAbstractListModel {
    Q_OBJECT
    QML_ELEMENT
    Q_PROPERTY(inferscope::ChatStore* store READ store WRITE setStore NOTIFY storeChanged)
    Q_PROPERTY(QString filter READ filter WRITE setFilter NOTIFY filterChanged)
    Q_PROPERTY(int count READ rowCount NOTIFY countChanged)
public:
    enum Role {
        ConversationIdRole = Qt::UserRole + 1,  // qint64
        TitleRole,           // QString
        CreatedAtRole,       // QDateTime (UTC)
        UpdatedAtRole,       // QDateTime (UTC)
        MessageCountRole,    // int
        ModelNameRole,       // QString
        SnippetRole,         // QString: the best matching text with matches in [ ]; "" without a filter or for a title match
        MatchMessageIdRole,  // qint64: the message the snippet comes from, 0 if none
        MatchVersionRole,    // int: -1 the message as shown, else the index of its other version that matched
    };
    Q_ENUM(Role)

    explicit ConversationListModel(QObject* parent = nullptr);

    ChatStore* store() const { return store_; }
    void setStore(ChatStore* store);  // not owned; may be null
    QString filter() const { return filter_; }
    void setFilter(const QString& filter);

    int rowCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    QHash<int, QByteArray> roleNames() const override;

    Q_INVOKABLE int indexOfConversation(qint64 conversationId) const;  // -1 if not listed
    Q_INVOKABLE void refresh();  // re-reads the store (done on conversationsChanged)

signals:
    void storeChanged();
    void filterChanged();
    void countChanged();

private:
    struct Row {
        qint64 id = 0;
        QString title;
        QDateTime createdAt;
        QDateTime updatedAt;
        int messageCount = 0;
        QString modelName;
        QString snippet;
        qint64 matchMessageId = 0;
        int matchVersion = -1;
        bool operator==(const Row&) const = default;
    };
    QList<Row> readRows() const;
    void applyRows(const QList<Row>& next);

    QPointer<ChatStore> store_;
    QString filter_;
    QList<Row> rows_;
};

}  // namespace inferscope
