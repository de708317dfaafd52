#pragma once
// ServerSlots: the slots of the server the app is connected to, live (issue 33). `inferscope-cli
// serve --parallel N` splits its KV budget (--ctx) evenly among N slots, one conversation each,
// runs their decode steps as one batch and reports it all at GET /slots; this asks for that report
// about once a second while it is `active` (the KV cache panel on screen) and a server is
// connected, and never otherwise. GUI thread only.
//
// The server is not trusted: the request carries the API key and follows redirects on the same
// server only, as RemoteSession's do (remote_request.h); the reply has deadlines and a 64 KiB cap
// (reply_guard.h); the report is read by slot_report.h (at most 64 slots, every field's type and
// range checked). A 404 means the server does not report slots (vLLM, llama.cpp's server): said
// once, and not asked again while connected to it. Any other failure is said in words, never with
// the body, nothing stale is shown, and it is asked again after kRetryMs.

#include <QNetworkAccessManager>
#include <QObject>
#include <QPointer>
#include <QQmlEngine>
#include <QTimer>
#include <QVariantList>
#include <algorithm>
#include <cstdint>
#include <optional>

#include "engine/engine_controller.h"
#include "remote/remote_request.h"
#include "remote/reply_guard.h"
#include "remote/slot_report.h"

class QNetworkReply;

namespace inferscope {

class ServerSlots : public QObject {
    Q_OBJECT
    QML_ELEMENT
    // Followed: its connection to a server (connectedServer) is the server asked.
    Q_PROPERTY(inferscope::EngineController* engine READ engine WRITE setEngine NOTIFY engineChanged)
    Q_PROPERTY(bool active READ active WRITE setActive NOTIFY activeChanged)
    Q_PROPERTY(Phase phase READ phase NOTIFY changed)
    Q_PROPERTY(QString status READ status NOTIFY changed)
    // One map per slot: id, state ("idle" | "generating"), generating, kvTokens, kvCapacity,
    // kvBytesUsed, kvBytesReserved, requests. Empty unless live.
    Q_PROPERTY(QVariantList slotList READ slotList NOTIFY changed)
    Q_PROPERTY(int generatingSlots READ generatingSlots NOTIFY changed)
    Q_PROPERTY(double budgetTokens READ budgetTokens NOTIFY changed)
    Q_PROPERTY(double bytesUsed READ bytesUsed NOTIFY changed)
    Q_PROPERTY(double bytesReserved READ bytesReserved NOTIFY changed)
    Q_PROPERTY(int queue READ queue NOTIFY changed)
    Q_PROPERTY(int decoding READ decoding NOTIFY changed)
    Q_PROPERTY(int lastBatch READ lastBatch NOTIFY changed)
    Q_PROPERTY(int largestBatch READ largestBatch NOTIFY changed)
    Q_PROPERTY(double decodeTokensPerSecond READ decodeTokensPerSecond NOTIFY changed)
    // -1: the server does not say (SlotReport).
    Q_PROPERTY(double prefixCopies READ prefixCopies NOTIFY changed)
    Q_PROPERTY(double prefixTokensCopied READ prefixTokensCopied NOTIFY changed)

public:
    // Off: no server. Asking: before its first answer. Live: the last report, read well.
    // NotReported: the server has no slot report (404), not asked again. Failed: the reason in
    // `status`, asked again after kRetryMs.
    enum class Phase { Off, Asking, Live, NotReported, Failed };
    Q_ENUM(Phase)

    static constexpr qint64 kMaxReplyBytes = 64 << 10;
    static constexpr int kIntervalMs = 1000;
    static constexpr int kRetryMs = 5000;

    explicit ServerSlots(QObject* parent = nullptr);
    ~ServerSlots() override;

    EngineController* engine() const { return engine_; }
    void setEngine(EngineController* engine);
    bool active() const { return active_; }
    void setActive(bool active);
    // The server to ask, or none (setEngine sets it from the engine's connection). The same server
    // again (address and credentials) changes nothing; another one starts over.
    void setServer(const std::optional<RemoteServer>& server);
    // Deadlines of each request (default 5 s each: the report is small and quick to make).
    void setTimeouts(const RemoteTimeouts& timeouts) { timeouts_ = timeouts; }
    // A request is under way or the next one is due.
    bool polling() const { return !reply_.isNull() || timer_.isActive(); }

    Phase phase() const { return phase_; }
    QString status() const { return status_; }
    const SlotReport& report() const { return report_; }
    QVariantList slotList() const { return slotList_; }
    int generatingSlots() const;
    double budgetTokens() const { return double(report_.budgetTokens); }
    double bytesUsed() const { return double(report_.bytesUsed); }
    double bytesReserved() const { return double(report_.bytesReserved); }
    int queue() const { return int(std::min<int64_t>(report_.queue, INT32_MAX)); }
    int decoding() const { return int(report_.decoding); }
    int lastBatch() const { return int(report_.lastBatch); }
    int largestBatch() const { return int(report_.largestBatch); }
    double decodeTokensPerSecond() const { return report_.decodeTokensPerSecond; }
    double prefixCopies() const { return double(report_.prefixCopies); }
    double prefixTokensCopied() const { return double(report_.prefixTokensCopied); }

signals:
    void engineChanged();
    void activeChanged();
    void changed();
    void replied();  // a request ended (read, refused or failed): the figures are its outcome

private:
    bool wanted() const { return active_ && server_ && phase_ != Phase::NotReported; }
    void followEngine();
    void schedule();  // asks now, or stops, as wanted() says
    void poll();
    void drop();      // the request under way, unheard
    void onData(QNetworkReply* reply);
    void onFinished(QNetworkReply* reply);
    QString failure(QNetworkReply* reply, int status) const;
    void show(Phase phase, const QString& status, SlotReport report = {});

    QNetworkAccessManager network_;
    QPointer<EngineController> engine_;
    std::optional<RemoteServer> server_;
    bool active_ = false;
    Phase phase_ = Phase::Off;
    QString status_;
    SlotReport report_;
    QVariantList slotList_;
    RemoteTimeouts timeouts_{5000, 5000, 5000};
    QTimer timer_;
    QPointer<QNetworkReply> reply_;
    QPointer<ReplyGuard> guard_;
    QByteArray body_;
};

}  // namespace inferscope
