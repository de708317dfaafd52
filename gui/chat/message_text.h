#pragma once
// What the chat does to a message's text before it is shown, stored and tokenized, and how it
// measures it without converting it (a 10 MB paste is judged in milliseconds).

#include <QString>
#include <QStringView>
#include <cstdint>

namespace inferscope {

// UTF-8 length of `text` without converting it; a lone surrogate counts as U+FFFD (3 bytes).
int64_t utf8Length(QStringView text);
// Lone surrogates (a JavaScript string can hold them, UTF-8 cannot) become U+FFFD, as they do
// on their way to the tokenizer: what is shown and stored is what the model was given.
QString wellFormed(QString text);
// The text on one line, cut to `max` characters with an ellipsis (a conversation's title).
QString firstLine(const QString& text, int max);

}  // namespace inferscope
