#pragma once
// StructuredOutput: the Settings' "Structured output" — what the next answers must be: any text
// (off), a JSON object, JSON matching a schema, or text a GBNF grammar accepts. The text is
// compiled as it is edited (core/grammar: jsonSchemaToGbnf, parseGbnf, within their limits) and
// what is wrong is said in place; ChatController gives each local answer the compiled grammar,
// which the sampler applies as its "grammar" stage (the Probabilities panel shows what it removed).

#include <QObject>
#include <QQmlEngine>
#include <memory>

#include "app/qml_singleton.h"
#include "record/structured_constraint.h"

namespace inferscope {

namespace grammar { struct Grammar; }  // core/grammar/gbnf.h

class StructuredOutput : public QObject, public QmlSingleton<StructuredOutput> {
    Q_OBJECT
    QML_ELEMENT
    QML_SINGLETON
    Q_PROPERTY(Kind kind READ kind WRITE setKind NOTIFY changed)
    // The schema (JSON) or the grammar (GBNF); unused for Off and Json.
    Q_PROPERTY(QString text READ text WRITE setText NOTIFY changed)
    // Why the text does not compile, as the parser says it ("" when it does, or for Off).
    Q_PROPERTY(QString error READ error NOTIFY changed)

public:
    enum class Kind { Off, Json, JsonSchema, Gbnf };
    Q_ENUM(Kind)

    // No default constructor: with one, Qt 6.4's QML_SINGLETON would build its own instance.
    explicit StructuredOutput(QObject* parent);
    ~StructuredOutput() override;

    Kind kind() const { return kind_; }
    void setKind(Kind kind);
    QString text() const { return text_; }
    void setText(const QString& text);
    QString error() const { return error_; }
    // What answers are held to, as the job and the answer's origin carry it.
    StructuredConstraint constraint() const;
    // What answers get: null for Off, or while the text does not compile.
    std::shared_ptr<const grammar::Grammar> grammar() const { return grammar_; }

    // An example to start from, for JsonSchema and Gbnf ("" for the others).
    Q_INVOKABLE static QString example(Kind kind);

signals:
    void changed();

private:
    void compile();
    Kind kind_ = Kind::Off;
    QString text_, error_;
    std::shared_ptr<const grammar::Grammar> grammar_;
};

static_assert(int(StructuredOutput::Kind::Gbnf) == int(StructuredKind::Gbnf) && int(StructuredOutput::Kind::JsonSchema) == int(StructuredKind::JsonSchema) &&
              int(StructuredOutput::Kind::Json) == int(StructuredKind::Json) && int(StructuredOutput::Kind::Off) == int(StructuredKind::Off));

}  // namespace inferscope
