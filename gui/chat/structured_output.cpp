#include "chat/structured_output.h"

#include "grammar/structured_check.h"

namespace inferscope {

StructuredOutput::StructuredOutput(QObject* parent) : QObject(parent) {}
StructuredOutput::~StructuredOutput() = default;

void StructuredOutput::setKind(Kind kind) {
    if (kind == kind_) return;
    kind_ = kind;
    // A schema or grammar to start from, when there is none yet.
    if (text_.trimmed().isEmpty()) text_ = example(kind);
    compile();
}

void StructuredOutput::setText(const QString& text) {
    if (text == text_) return;
    text_ = text;
    compile();
}

StructuredConstraint StructuredOutput::constraint() const {
    StructuredConstraint c;
    c.kind = StructuredKind(kind_);  // the same order (static_assert in the header)
    if (kind_ == Kind::JsonSchema || kind_ == Kind::Gbnf) c.text = text_.toStdString();
    return c;
}

void StructuredOutput::compile() {
    grammar_.reset();
    error_.clear();
    auto g = grammar::compileConstraint(constraint());
    if (g) grammar_ = std::move(*g);
    else error_ = QString::fromStdString(g.error().message);
    emit changed();
}

QString StructuredOutput::example(Kind kind) {
    switch (kind) {
        case Kind::JsonSchema:
            return QStringLiteral(
                "{\n  \"type\": \"object\",\n  \"properties\": {\n    \"name\": {\"type\": \"string\"},\n"
                "    \"age\": {\"type\": \"integer\", \"minimum\": 0}\n  },\n  \"required\": [\"name\", \"age\"]\n}");
        case Kind::Gbnf:
            return QStringLiteral("root ::= answer \".\"\nanswer ::= \"yes\" | \"no\"");
        default:
            return {};
    }
}

}  // namespace inferscope
