#include "server/http/exchange.h"

#include <poll.h>

namespace inferscope::server::http {

Exchange::Exchange(RequestHead head, std::string body, int socketFd, size_t maxPendingBytes)
    : head_(std::move(head)), body_(std::move(body)), fd_(socketFd), maxPending_(maxPendingBytes) {}

void Exchange::reply(Reply reply) {
    std::function<void()> wake, dropped;
    {
        std::lock_guard lock(mutex_);
        if (complete_ || started_) return;
        reply_ = std::move(reply);
        complete_ = true;
        wake = wake_;
        dropped = std::move(onInterrupt_);  // it may hold what holds this exchange
        onInterrupt_ = nullptr;
    }
    if (wake) wake();
}

void Exchange::startStream(int status, std::string contentType, std::vector<Header> headers) {
    std::function<void()> wake;
    {
        std::lock_guard lock(mutex_);
        if (complete_ || started_) return;
        started_ = true;
        status_ = status;
        contentType_ = std::move(contentType);
        headers_ = std::move(headers);
        wake = wake_;
    }
    if (wake) wake();
}

bool Exchange::send(std::string data) {
    std::function<void()> wake;
    {
        std::unique_lock lock(mutex_);
        if (!started_ || complete_) return false;
        room_.wait(lock, [&] { return unsent_ < maxPending_ || gone_ || stopping_; });
        if (gone_) return false;
        unsent_ += data.size();
        data_ += data;
        wake = wake_;
    }
    if (wake) wake();
    return true;
}

void Exchange::finish() {
    std::function<void()> wake, dropped;
    {
        std::lock_guard lock(mutex_);
        if (complete_) return;
        if (!started_) {  // nothing was started: an empty 200 would mislead; the transport closes
            started_ = true;
            status_ = 500;
        }
        finished_ = true;
        complete_ = true;
        wake = wake_;
        dropped = std::move(onInterrupt_);  // it may hold what holds this exchange
        onInterrupt_ = nullptr;
    }
    if (wake) wake();
}

bool Exchange::gone() const {
    if (gone_) return true;
    {
        std::lock_guard lock(mutex_);
        if (complete_) return gone_;  // the transport may close the socket once complete
    }
    pollfd p{fd_, POLLRDHUP, 0};
    if (fd_ >= 0 && ::poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR))) {
        const_cast<Exchange*>(this)->markGone();
        return true;
    }
    return false;
}

void Exchange::releaseBody() {
    std::function<void()> release;
    {
        std::lock_guard lock(mutex_);
        std::string().swap(body_);
        release = std::move(bodyRelease_);
        bodyRelease_ = nullptr;
    }
    if (release) release();
}

void Exchange::setBodyRelease(std::function<void()> release) {
    std::lock_guard lock(mutex_);
    bodyRelease_ = std::move(release);
}

void Exchange::onInterrupt(std::function<void()> fn) {
    std::lock_guard lock(mutex_);
    onInterrupt_ = std::move(fn);
}

Exchange::Pending Exchange::take() {
    std::lock_guard lock(mutex_);
    Pending p;
    if (reply_) {
        p.reply = std::move(reply_);
        reply_.reset();
        return p;
    }
    if (started_ && !startTaken_) {
        startTaken_ = true;
        p.streamStarted = true;
        p.status = status_;
        p.contentType = contentType_;
        p.headers = headers_;
    }
    p.data.swap(data_);
    p.finished = finished_;
    return p;
}

void Exchange::wrote(size_t bytes) {
    {
        std::lock_guard lock(mutex_);
        unsent_ = bytes > unsent_ ? 0 : unsent_ - bytes;
    }
    room_.notify_all();
}

void Exchange::interrupt() {
    std::function<void()> fn;
    {
        std::lock_guard lock(mutex_);
        if (interrupted_ || complete_) return;
        interrupted_ = true;
        fn = std::move(onInterrupt_);
    }
    room_.notify_all();
    if (fn) fn();
}

void Exchange::markGone() {
    gone_ = true;
    room_.notify_all();
    interrupt();
}

void Exchange::markStopping() {
    stopping_ = true;
    room_.notify_all();
    interrupt();
}

void Exchange::setWake(std::function<void()> wake) {
    std::lock_guard lock(mutex_);
    wake_ = std::move(wake);
}

bool Exchange::complete() const {
    std::lock_guard lock(mutex_);
    return complete_;
}

}  // namespace inferscope::server::http
