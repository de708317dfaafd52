#pragma once
// CandidateListModel: the top candidates of one step, as the Probabilities panel's clickable rows. Updated
// in place (dataChanged when the number of candidates stays the same), so the bars' delegates
// are reused while an answer streams instead of being rebuilt.

#include <QAbstractListModel>
#include <QtQml/qqmlregistration.h>

namespace inferscope {

struct CandidateRow {
    int id = 0;
    QString token;        // shown form ("␣there", "\n", "<0xF0>")
    double logit = 0;
    double pRaw = 0;      // softmax at temperature 1
    double pFinal = 0;    // in the distribution sampled (0: removed by a stage)
    QVariantList p;       // after each stage
    bool chosen = false;
};

class CandidateListModel : public QAbstractListModel {
    Q_OBJECT
    QML_ELEMENT
    QML_UNCREATABLE("owned by StepInspector")
    Q_PROPERTY(int count READ rowCount NOTIFY countChanged)
public:
    enum Role { IdRole = Qt::UserRole + 1, TokenRole, LogitRole, PRawRole, PFinalRole, StagePRole, ChosenRole };
    using QAbstractListModel::QAbstractListModel;
    int rowCount(const QModelIndex& parent = {}) const override { return parent.isValid() ? 0 : int(rows_.size()); }
    QVariant data(const QModelIndex& index, int role) const override;
    QHash<int, QByteArray> roleNames() const override;
    void set(QList<CandidateRow> rows);

signals:
    void countChanged();

private:
    QList<CandidateRow> rows_;
};

}  // namespace inferscope
