#include "chat/structured_output.h"

#include "grammar/gbnf.h"
#include "grammar/json_schema.h"

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

void StructuredOutput::compile() {
    grammar_.reset();
    error_.clear();
    Result<std::string> gbnf = std::string();
    switch (kind_) {
        case Kind::Off: return emit changed();
        case Kind::Json: gbnf = grammar::jsonObjectGbnf(); break;
        case Kind::JsonSchema: gbnf = grammar::jsonSchemaToGbnf(text_.toStdString()); break;
        case Kind::Gbnf: gbnf = text_.toStdString(); break;
    }
    if (gbnf) {
        auto g = grammar::parseGbnf(*gbnf);
        if (g) grammar_ = std::make_shared<const grammar::Grammar>(std::move(*g));
        else error_ = QString::fromStdString(g.error().message);
    } else {
        error_ = QString::fromStdString(gbnf.error().message);
    }
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
