#include "visualizer/candidate_list_model.h"

namespace inferscope {

QVariant CandidateListModel::data(const QModelIndex& index, int role) const {
    if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid)) return {};
    const CandidateRow& r = rows_[index.row()];
    switch (role) {
        case IdRole: return r.id;
        case Qt::DisplayRole:
        case TokenRole: return r.token;
        case LogitRole: return r.logit;
        case PRawRole: return r.pRaw;
        case PFinalRole: return r.pFinal;
        case StagePRole: return r.p;
        case ChosenRole: return r.chosen;
        default: return {};
    }
}

QHash<int, QByteArray> CandidateListModel::roleNames() const {
    return {{IdRole, "tokenId"}, {TokenRole, "token"}, {LogitRole, "logit"}, {PRawRole, "pRaw"},
            {PFinalRole, "pFinal"}, {StagePRole, "stageP"}, {ChosenRole, "chosen"}};
}

void CandidateListModel::set(QList<CandidateRow> rows) {
    if (rows.size() == rows_.size()) {
        rows_ = std::move(rows);
        if (!rows_.isEmpty()) emit dataChanged(index(0), index(int(rows_.size()) - 1));
    } else {
        beginResetModel();
        rows_ = std::move(rows);
        endResetModel();
        emit countChanged();
    }
}

}  // namespace inferscope
