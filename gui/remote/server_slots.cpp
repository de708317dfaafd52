#include "remote/server_slots.h"

#include <QNetworkReply>
#include <QNetworkRequest>
#include <algorithm>
#include <utility>

namespace inferscope {

ServerSlots::ServerSlots(QObject* parent) : QObject(parent) {
    timer_.setSingleShot(true);
    connect(&timer_, &QTimer::timeout, this, &ServerSlots::poll);
}

ServerSlots::~ServerSlots() { drop(); }

void ServerSlots::setEngine(EngineController* engine) {
    if (engine_ == engine) return;
    if (engine_) engine_->disconnect(this);
    engine_ = engine;
    if (engine_) connect(engine_, &EngineController::modelChanged, this, &ServerSlots::followEngine);
    followEngine();
    emit engineChanged();
}

void ServerSlots::followEngine() { setServer(engine_ ? engine_->connectedServer() : std::nullopt); }

void ServerSlots::setActive(bool active) {
    if (active_ == active) return;
    active_ = active;
    schedule();
    emit activeChanged();
}

void ServerSlots::setServer(const std::optional<RemoteServer>& server) {
    const bool same = server.has_value() == server_.has_value() &&
                      (!server || (server->base == server_->base && server->apiKey == server_->apiKey && server->userInfo == server_->userInfo));
    if (same) return;
    drop();
    timer_.stop();
    server_ = server;
    if (server_) show(Phase::Asking, tr("Asking %1 for its slots\u2026").arg(server_->base.toString()));
    else show(Phase::Off, QString());
    schedule();
}

int ServerSlots::generatingSlots() const {
    return int(std::count_if(report_.perSlot.begin(), report_.perSlot.end(), [](const SlotFigures& s) { return s.generating; }));
}

void ServerSlots::schedule() {
    if (!wanted()) {
        timer_.stop();
        drop();
        return;
    }
    if (!reply_ && !timer_.isActive()) poll();
}

void ServerSlots::poll() {
    if (!wanted() || reply_) return;
    QNetworkRequest request = remoteRequest(*server_, QStringLiteral("/slots"));
    request.setRawHeader("Accept", "application/json");
    QNetworkReply* reply = network_.get(request);
    reply->setReadBufferSize(kMaxReplyBytes);
    reply_ = reply;
    guard_ = new ReplyGuard(reply, timeouts_, kMaxReplyBytes);
    body_.clear();
    connect(reply, &QNetworkReply::readyRead, this, [this, reply] { onData(reply); });
    connect(reply, &QNetworkReply::finished, this, [this, reply] { onFinished(reply); });
}

void ServerSlots::drop() {
    if (!reply_) return;
    QNetworkReply* reply = std::exchange(reply_, nullptr);
    reply->disconnect(this);
    if (!reply->isFinished()) reply->abort();
    reply->deleteLater();
    body_.clear();
}

void ServerSlots::onData(QNetworkReply* reply) {
    if (reply != reply_ || !guard_ || guard_->problem() != ReplyGuard::Problem::None) return;
    const QByteArray bytes = reply->readAll();
    if (guard_->take(bytes.size())) body_ += bytes;
}

void ServerSlots::onFinished(QNetworkReply* reply) {
    reply->deleteLater();
    if (reply != reply_) return;
    onData(reply);
    reply_ = nullptr;
    const QByteArray body = std::exchange(body_, QByteArray());
    const QString where = server_->base.toString();
    const int status = reply->attribute(QNetworkRequest::HttpStatusCodeAttribute).toInt();
    if (status == 404) {
        show(Phase::NotReported, tr("%1 does not report slots: GET /slots answered 404. inferscope-cli serve reports them; "
                                    "other servers (vLLM, llama.cpp's) do not, so this view stays empty.").arg(where));
    } else if (guard_ && guard_->problem() != ReplyGuard::Problem::None) {
        show(Phase::Failed, tr("Slots: %1").arg(guard_->describe(where)));
    } else if (reply->error() != QNetworkReply::NoError || status != 200) {
        show(Phase::Failed, failure(reply, status));
    } else if (auto report = parseSlotReport(body)) {
        show(Phase::Live, tr("Live from %1, asked every second while this panel is open.").arg(where), std::move(*report));
    } else if (report.error().otherFormat) {
        show(Phase::NotReported, tr("%1 answers GET /slots in another form (%2): only inferscope-cli serve's slot report is shown here.")
                                     .arg(where, report.error().reason));
    } else {
        show(Phase::Failed, tr("%1 sent a slot report this app refuses: %2. Nothing of it is shown.").arg(where, report.error().reason));
    }
    if (wanted()) timer_.start(phase_ == Phase::Failed ? kRetryMs : kIntervalMs);
    emit replied();
}

// In words a person can act on; the body and the server's reason phrase are never shown.
QString ServerSlots::failure(QNetworkReply* reply, int status) const {
    const QString where = server_->base.toString();
    if (const QString redirect = redirectProblem(reply, where); !redirect.isEmpty()) return redirect;
    if (status == 401 || status == 403)
        return server_->apiKey.isEmpty() ? tr("%1 wants an API key for its slots (HTTP %2).").arg(where).arg(status)
                                         : tr("%1 refused the API key for its slots (HTTP %2).").arg(where).arg(status);
    if (status == 0) return tr("Could not ask %1 for its slots: %2.").arg(where, networkProblem(reply));
    if (status == 200) return tr("The slot report from %1 was cut off: %2.").arg(where, networkProblem(reply));
    return tr("%1 answered HTTP %2 to GET /slots.").arg(where).arg(status);
}

void ServerSlots::show(Phase phase, const QString& status, SlotReport report) {
    phase_ = phase;
    status_ = status;
    report_ = std::move(report);
    slotList_.clear();
    for (const SlotFigures& s : report_.perSlot)
        slotList_.append(QVariantMap{{QStringLiteral("id"), double(s.id)},
                                     {QStringLiteral("state"), s.generating ? QStringLiteral("generating") : QStringLiteral("idle")},
                                     {QStringLiteral("generating"), s.generating},
                                     {QStringLiteral("kvTokens"), double(s.kvTokens)},
                                     {QStringLiteral("kvCapacity"), double(s.kvCapacity)},
                                     {QStringLiteral("kvBytesUsed"), double(s.kvBytesUsed)},
                                     {QStringLiteral("kvBytesReserved"), double(s.kvBytesReserved)},
                                     {QStringLiteral("requests"), double(s.requests)}});
    emit changed();
}

}  // namespace inferscope
