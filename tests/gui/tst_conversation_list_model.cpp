// ConversationListModel over a ChatStore: rows follow the store with inserts, moves, removes and
// dataChanged (never a reset), checked by QAbstractItemModelTester throughout; the filter switches
// to title matches and FTS results; QML can use it declaratively.
#include <QAbstractItemModelTester>
#include <QQmlComponent>
#include <QQmlContext>
#include <QQmlEngine>
#include <QSignalSpy>
#include <QTest>
#include <QtQml/QQmlExtensionPlugin>

#include "tst_chat_store_helpers.h"
#include "store/conversation_list_model.h"

#include "app/qml_modules.h"  // Q_IMPORT_QML_PLUGIN of each module

using namespace inferscope;
using namespace inferscope::testing;
using Role = ConversationListModel::Role;

namespace {

qint64 makeConversation(ChatStore& store, const QString& title, int year) {
    StoredConversation c;
    c.title = title;
    c.modelName = QStringLiteral("model-%1").arg(year);
    c.createdAt = QDateTime(QDate(year, 1, 1), QTime(0, 0), Qt::UTC);
    return *store.createConversation(c);
}

QStringList titles(const ConversationListModel& model) {
    QStringList t;
    for (int row = 0; row < model.rowCount(); ++row) t << model.data(model.index(row), Role::TitleRole).toString();
    return t;
}

// Counts the model's change signals; a reset would lose the view's selection and scroll.
struct ChangeSpy {
    explicit ChangeSpy(QAbstractItemModel* m)
        : inserted(m, &QAbstractItemModel::rowsInserted), removed(m, &QAbstractItemModel::rowsRemoved),
          moved(m, &QAbstractItemModel::rowsMoved), changed(m, &QAbstractItemModel::dataChanged),
          reset(m, &QAbstractItemModel::modelReset) {}
    void clear() {
        for (QSignalSpy* s : {&inserted, &removed, &moved, &changed, &reset}) s->clear();
    }
    QSignalSpy inserted, removed, moved, changed, reset;
};

}  // namespace

class TestConversationListModel : public QObject {
    Q_OBJECT
private slots:
    void emptyWithoutStore();
    void followsTheStoreRowByRow();
    void rolesCarryTheConversation();
    void filterShowsTitleMatchesThenSearchHits();
    void filterFollowsTheStore();
    void storeGoingAwayEmptiesTheModel();
    void qmlUsesItDeclaratively();
};

void TestConversationListModel::emptyWithoutStore() {
    ConversationListModel model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    QCOMPARE(model.rowCount(), 0);
    model.setFilter(QStringLiteral("anything"));
    QCOMPARE(model.rowCount(), 0);
    ChatStore closed;  // a store that is not open lists nothing either
    model.setStore(&closed);
    QCOMPARE(model.rowCount(), 0);
}

void TestConversationListModel::followsTheStoreRowByRow() {
    ChatStore store;
    QVERIFY(store.open(QStringLiteral(":memory:")).ok);
    const qint64 older = makeConversation(store, QStringLiteral("older"), 2020);
    makeConversation(store, QStringLiteral("newer"), 2022);
    ConversationListModel model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    ChangeSpy spy(&model);
    QSignalSpy count(&model, &ConversationListModel::countChanged);
    model.setStore(&store);
    QCOMPARE(titles(model), (QStringList{"newer", "older"}));
    QCOMPARE(count.count(), 1);

    spy.clear();
    const qint64 middle = makeConversation(store, QStringLiteral("middle"), 2021);
    QCOMPARE(titles(model), (QStringList{"newer", "middle", "older"}));
    QCOMPARE(spy.inserted.count(), 1);
    QCOMPARE(spy.inserted.first().at(1).toInt(), 1);  // inserted at row 1

    spy.clear();
    QVERIFY(store.appendMessage(userMessage(older, QStringLiteral("bump"))));  // most recent now
    QCOMPARE(titles(model), (QStringList{"older", "newer", "middle"}));
    QCOMPARE(spy.moved.count(), 1);
    QCOMPARE(spy.changed.count(), 1);  // its updatedAt and messageCount
    QCOMPARE(model.data(model.index(0), Role::MessageCountRole).toInt(), 1);

    spy.clear();
    QVERIFY(store.renameConversation(middle, QStringLiteral("renamed")));
    QCOMPARE(titles(model), (QStringList{"older", "newer", "renamed"}));
    QCOMPARE(spy.changed.count(), 1);
    QCOMPARE(spy.moved.count() + spy.inserted.count() + spy.removed.count(), 0);

    spy.clear();
    QVERIFY(store.deleteConversation(older));
    QCOMPARE(titles(model), (QStringList{"newer", "renamed"}));
    QCOMPARE(spy.removed.count(), 1);
    QCOMPARE(spy.removed.first().at(1).toInt(), 0);
    QCOMPARE(spy.reset.count(), 0);
    QCOMPARE(model.indexOfConversation(middle), 1);
    QCOMPARE(model.indexOfConversation(older), -1);
    QCOMPARE(model.property("count").toInt(), 2);
}

void TestConversationListModel::rolesCarryTheConversation() {
    ChatStore store;
    QVERIFY(store.open(QStringLiteral(":memory:")).ok);
    const qint64 id = makeConversation(store, QStringLiteral("Roles"), 2024);
    store.appendMessage(userMessage(id, QStringLiteral("one")));
    store.appendMessage(assistantMessage(id, QStringLiteral("two")));
    ConversationListModel model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    model.setStore(&store);
    const StoredConversation c = *store.conversation(id);
    const QHash<int, QByteArray> names = model.roleNames();
    const QModelIndex index = model.index(0);
    const auto role = [&](const char* name) { return model.data(index, names.key(name)); };
    QCOMPARE(role("conversationId").toLongLong(), id);
    QCOMPARE(role("title").toString(), QStringLiteral("Roles"));
    QCOMPARE(role("createdAt").toDateTime(), c.createdAt);
    QCOMPARE(role("updatedAt").toDateTime(), c.updatedAt);
    QCOMPARE(role("messageCount").toInt(), 2);
    QCOMPARE(role("modelName").toString(), QStringLiteral("model-2024"));
    QCOMPARE(role("snippet").toString(), QString());
    QCOMPARE(role("matchMessageId").toLongLong(), 0);
    QCOMPARE(model.data(index, Qt::DisplayRole).toString(), QStringLiteral("Roles"));
}

void TestConversationListModel::filterShowsTitleMatchesThenSearchHits() {
    ChatStore store;
    QVERIFY(store.open(QStringLiteral(":memory:")).ok);
    const qint64 facts = makeConversation(store, QStringLiteral("Llama facts"), 2020);
    const qint64 other = makeConversation(store, QStringLiteral("Other"), 2021);
    makeConversation(store, QStringLiteral("Third"), 2022);
    store.appendMessage(userMessage(facts, QStringLiteral("nothing about them here")));
    const qint64 hit = *store.appendMessage(userMessage(other, QStringLiteral("what do llamas eat")));
    ConversationListModel model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    model.setStore(&store);
    QCOMPARE(model.rowCount(), 3);
    ChangeSpy spy(&model);
    QSignalSpy filterChanged(&model, &ConversationListModel::filterChanged);
    model.setFilter(QStringLiteral("llama"));
    QCOMPARE(filterChanged.count(), 1);
    QCOMPARE(titles(model), (QStringList{"Llama facts", "Other"}));
    QCOMPARE(model.data(model.index(0), Role::SnippetRole).toString(), QString());  // a title match
    QCOMPARE(model.data(model.index(1), Role::SnippetRole).toString(), QStringLiteral("what do [llamas] eat"));
    QCOMPARE(model.data(model.index(1), Role::MatchMessageIdRole).toLongLong(), hit);
    QCOMPARE(spy.reset.count(), 0);

    for (const QString& hostile : {QStringLiteral("\"llama"), QStringLiteral("llama*"), QStringLiteral("NEAR("),
                                   QStringLiteral("-"), QStringLiteral("\"")}) {
        model.setFilter(hostile);
        QVERIFY2(store.lastError().isEmpty(), qPrintable(store.lastError()));
    }
    model.setFilter(QStringLiteral("\"llama"));
    QCOMPARE(titles(model), (QStringList{"Other"}));  // the quote is not in the title; the words match
    model.setFilter(QString());
    QCOMPARE(titles(model), (QStringList{"Other", "Llama facts", "Third"}));  // by last message
    QCOMPARE(spy.reset.count(), 0);
}

void TestConversationListModel::filterFollowsTheStore() {
    ChatStore store;
    QVERIFY(store.open(QStringLiteral(":memory:")).ok);
    const qint64 a = makeConversation(store, QStringLiteral("A"), 2020);
    const qint64 b = makeConversation(store, QStringLiteral("B"), 2021);
    store.appendMessage(userMessage(a, QStringLiteral("alpaca wool")));
    ConversationListModel model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    model.setStore(&store);
    model.setFilter(QStringLiteral("alpaca"));
    QCOMPARE(titles(model), (QStringList{"A"}));
    store.appendMessage(userMessage(b, QStringLiteral("alpaca alpaca alpaca")));  // a better hit
    QCOMPARE(titles(model), (QStringList{"B", "A"}));
    QVERIFY(store.truncateConversation(a, 0));
    QCOMPARE(titles(model), (QStringList{"B"}));
    QVERIFY(store.renameConversation(b, QStringLiteral("Alpacas")));  // now a title match, no snippet
    QCOMPARE(titles(model), (QStringList{"Alpacas"}));
    QCOMPARE(model.data(model.index(0), Role::SnippetRole).toString(), QString());
    QVERIFY(store.deleteConversation(b));
    QCOMPARE(model.rowCount(), 0);
}

void TestConversationListModel::storeGoingAwayEmptiesTheModel() {
    auto store = std::make_unique<ChatStore>();
    QVERIFY(store->open(QStringLiteral(":memory:")).ok);
    makeConversation(*store, QStringLiteral("x"), 2020);
    ConversationListModel model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    model.setStore(store.get());
    QCOMPARE(model.rowCount(), 1);
    store->close();
    QCOMPARE(model.rowCount(), 0);
    QVERIFY(store->open(QStringLiteral(":memory:")).ok);
    makeConversation(*store, QStringLiteral("y"), 2020);
    QCOMPARE(model.rowCount(), 1);
    store.reset();
    QCOMPARE(model.rowCount(), 0);
    QCOMPARE(model.store(), nullptr);
}

void TestConversationListModel::qmlUsesItDeclaratively() {
    ChatStore store;
    QVERIFY(store.open(QStringLiteral(":memory:")).ok);
    makeConversation(store, QStringLiteral("Llama facts"), 2020);
    makeConversation(store, QStringLiteral("Other"), 2021);
    QQmlEngine engine;
    engine.rootContext()->setContextProperty(QStringLiteral("appChatStore"), &store);
    QQmlComponent component(&engine);
    component.setData("import Inferscope.Store\n"
                      "ConversationListModel { store: appChatStore; filter: \"llama\" }\n",
                      QUrl(QStringLiteral("qrc:/test.qml")));
    std::unique_ptr<QObject> object(component.create());
    QVERIFY2(object, qPrintable(component.errorString()));
    auto* model = qobject_cast<ConversationListModel*>(object.get());
    QVERIFY(model);
    QCOMPARE(model->store(), &store);
    QCOMPARE(object->property("count").toInt(), 1);
    object->setProperty("filter", QString());
    QCOMPARE(object->property("count").toInt(), 2);
}

QTEST_MAIN(TestConversationListModel)
#include "tst_conversation_list_model.moc"
