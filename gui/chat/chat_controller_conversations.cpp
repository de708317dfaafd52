// ChatController, the stored side: a conversation's life in the ChatStore (new, open, rename,
// delete, export), saving its messages in order, and the edits that continue a conversation in a
// new one so that no stored turn is ever deleted (editing an earlier question, showing another
// version of an earlier answer).
#include "chat/chat_controller.h"

#include "chat/conversation_mapper.h"
#include "chat/message_text.h"
#include "engine/engine_controller.h"
#include "store/chat_store.h"

namespace inferscope {

void ChatController::newConversation() {
    // Mid-answer: the answer so far stays with its conversation. (Only stopping left the job
    // streaming into the new, empty conversation's row 1: ChatModel::appendSteps out of bounds.)
    finishInterrupted();
    model_.reset({});
    conversationId_ = 0;
    title_.clear();
    setCacheNote(QString());
    setError(QString());
    // The mode, template and system prompt the user set stay (Ctrl+N forgot them); the model's
    // own mode is taken when a model is loaded.
    emit canSendChanged();
    emit conversationChanged();
}

bool ChatController::openConversation(qint64 id) {
    if (!store_ || generating()) return false;
    auto c = store_->conversation(id);
    if (!c) return false;
    std::vector<ChatMessage> rows;
    const bool sameModel = c->modelName == engine_->modelPath();
    for (const StoredMessage& s : store_->messages(id)) {
        const QList<StoredVersion> versions = s.versionCount > 1 ? store_->versions(s.id) : QList<StoredVersion>{};
        rows.push_back(ConversationMapper::fromStored(s, versions, sameModel));
    }
    model_.reset(std::move(rows));
    conversationId_ = id;
    title_ = c->title;
    conversationModel_ = c->modelName;
    mode_ = modeFromName(c->mode);
    templateChoice_ = c->templateName.isEmpty() ? QStringLiteral("auto") : c->templateName;
    systemPrompt_ = c->systemPrompt;
    setCacheNote(QString());
    setError(QString());
    emit settingsChanged();
    emit conversationChanged();
    return true;
}

bool ChatController::renameConversation(qint64 id, const QString& title) {
    if (!store_ || !store_->renameConversation(id, title)) return false;
    if (id == conversationId_) {
        title_ = title;
        emit conversationChanged();
    }
    return true;
}

bool ChatController::deleteConversation(qint64 id) {
    if (!store_) return false;
    if (id == conversationId_) newConversation();
    return store_->deleteConversation(id);
}

bool ChatController::exportConversation(qint64 id, const QUrl& file, const QString& format) {
    if (!store_) return false;
    const QString path = file.isLocalFile() ? file.toLocalFile() : file.toString();
    if (!store_->exportConversation(id, path, format)) {
        setError(tr("Export failed: %1").arg(store_->lastError()));
        return false;
    }
    return true;
}

bool ChatController::ensureConversation(const QString& firstText) {
    if (conversationId_ != 0 || !store_ || !store_->isOpen()) return true;
    StoredConversation c;
    c.title = firstLine(firstText, 60);
    c.modelName = engine_->modelPath();
    c.systemPrompt = systemPrompt_;
    c.mode = modeName(mode_);
    c.templateName = templateChoice_ == QLatin1String("auto") ? QString() : templateChoice_;
    auto id = store_->createConversation(c);
    if (!id) {
        setError(store_->lastError());  // "Could not create the conversation: database or disk is full"
        return false;
    }
    conversationId_ = *id;
    title_ = c.title;
    conversationModel_ = c.modelName;
    emit conversationChanged();
    return true;
}

void ChatController::saveConversationSettings() {
    if (!store_ || !store_->isOpen() || conversationId_ == 0) return;
    auto c = store_->conversation(conversationId_);
    if (!c) return;
    c->systemPrompt = systemPrompt_;
    c->mode = modeName(mode_);
    c->templateName = templateChoice_ == QLatin1String("auto") ? QString() : templateChoice_;
    c->modelName = engine_->modelPath();
    store_->updateConversation(*c);
}

bool ChatController::saveMessage(int row) {
    if (!store_ || !store_->isOpen()) return false;
    if (conversationId_ == 0 && !ensureConversation(model_.at(0).text)) return false;
    for (int r = 0; r < row; ++r)
        if (model_.at(r).storeId == 0 && !saveRow(r)) return false;
    return saveRow(row);
}

bool ChatController::saveRow(int row) {
    const StoredRow stored = ConversationMapper::toStored(model_.at(row), conversationId_, row);
    // Replacing from the row's position: nothing normally (the rows after it are not stored yet),
    // a previous version of this answer, or rows an edit removed when removing them failed.
    auto id = store_->replaceMessagesFrom(stored.message, stored.otherVersions);
    if (!id) {
        setError(store_->lastError());  // "Could not save the message: database or disk is full"
        return false;
    }
    model_.setStoreId(row, *id);
    return true;
}

bool ChatController::continueInNewConversation(int keep, const QString& title, const QString& failure, const QString& firstText) {
    if (!store_ || !store_->isOpen() || conversationId_ == 0) {
        model_.truncate(keep);  // nothing stored to keep
        return true;
    }
    const qint64 originalId = conversationId_;
    model_.truncate(keep);
    for (int r = 0; r < keep; ++r) model_.setStoreId(r, 0);
    conversationId_ = 0;
    const bool made = ensureConversation(keep > 0 ? model_.at(0).text : firstText) && renameConversation(conversationId_, title) &&
                      (keep == 0 || saveMessage(keep - 1));
    if (!made) {
        // A full disk, say: no half-made copy is left, and the window shows the original again.
        const QString why = store_->lastError();
        if (conversationId_ != 0) store_->deleteConversation(conversationId_);
        openConversation(originalId);
        setError(failure.arg(why));
        return false;
    }
    return true;
}

bool ChatController::showVariant(int row, int variant) {
    if (generating()) return false;
    const QString original = title_;
    const qint64 originalId = conversationId_;
    if (!model_.showVariant(row, variant)) return false;  // refuses a row or version that is not there
    const bool laterTurns = row + 1 < model_.count();
    if (!laterTurns || !store_ || !store_->isOpen() || originalId == 0) {
        if (laterTurns) model_.truncate(row + 1);  // they were made with the other version (and are not stored)
        saveMessage(row);  // the last answer (or nothing on disk yet): this conversation shows the version
        return true;
    }
    // Later turns were made with the version shown: they stay in this conversation, untouched, and
    // the other version continues in a new conversation with the turns up to this answer (and all
    // its versions), as a branch.
    const QString title = tr("%1 (version %2)").arg(original).arg(variant + 1);
    if (!continueInNewConversation(row + 1, title, tr("Could not open that version as a new conversation: %1"))) return false;
    setStoreMessage(tr("Version %1 of that answer continues here, in “%2”; the turns that followed the other version stay in “%3”.")
                        .arg(variant + 1)
                        .arg(title, original));
    return true;
}

bool ChatController::editAndResend(int row, const QString& typed) {
    const QString text = wellFormed(typed);
    if (!canSend() || row < 0 || row >= model_.count() || model_.at(row).role != Message::User) return false;
    if (const QString error = tooLongError(text); !error.isEmpty()) {
        setError(error);
        return false;
    }
    // What followed the question (its answer, their versions, later turns) stays in the stored
    // conversation; the edit goes on in a new one holding the turns before it.
    if (row + 1 < model_.count() && store_ && store_->isOpen() && conversationId_ != 0) {
        const QString original = title_;
        const QString title = tr("%1 (edited)").arg(original);
        if (!continueInNewConversation(row, title, tr("Could not open the edit as a new conversation: %1"), text)) return false;
        setStoreMessage(tr("The edited question continues here, in “%1”; the turns that followed the original stay in “%2”.")
                            .arg(title, original));
    }
    model_.truncate(row);
    ChatMessage user;
    user.role = Message::User;
    user.text = text;
    model_.append(std::move(user));
    setError(QString());
    return startAnswer();
}

}  // namespace inferscope
