#include "chat/chat_message.h"

namespace inferscope {

QString roleName(Message::Role role) { return role == Message::User ? QStringLiteral("user") : QStringLiteral("assistant"); }

Message::Role roleFromName(const QString& name) { return name == QLatin1String("user") ? Message::User : Message::Assistant; }

Message::Finish finishOf(FinishReason reason) {
    switch (reason) {
        case FinishReason::EndOfGeneration: return Message::EndOfGeneration;
        case FinishReason::StopString: return Message::StopString;
        case FinishReason::MaxTokens: return Message::MaxTokens;
        case FinishReason::ContextFull: return Message::ContextFull;
        case FinishReason::Cancelled: return Message::Cancelled;
    }
    return Message::NotFinished;
}

QString finishName(Message::Finish finish) {
    switch (finish) {
        case Message::NotFinished: return {};
        case Message::EndOfGeneration: return QString::fromLatin1(finishReasonName(FinishReason::EndOfGeneration).data());
        case Message::StopString: return QString::fromLatin1(finishReasonName(FinishReason::StopString).data());
        case Message::MaxTokens: return QString::fromLatin1(finishReasonName(FinishReason::MaxTokens).data());
        case Message::ContextFull: return QString::fromLatin1(finishReasonName(FinishReason::ContextFull).data());
        case Message::Cancelled: return QString::fromLatin1(finishReasonName(FinishReason::Cancelled).data());
        case Message::Failed: return QStringLiteral("error");
    }
    return {};
}

Message::Finish finishFromName(const QString& name) {
    for (Message::Finish f : {Message::EndOfGeneration, Message::StopString, Message::MaxTokens, Message::ContextFull,
                              Message::Cancelled, Message::Failed})
        if (name == finishName(f)) return f;
    return Message::NotFinished;
}

}  // namespace inferscope
