#pragma once
// The library's worker threads (a scan, a hub request, a download): each is a QThread::create
// with a cancel flag its work checks; stopping one sets the flag and joins it.
#include <QThread>
#include <atomic>
#include <memory>
#include <utility>

namespace inferscope {

// Sets `cancel`, waits for `thread` to return and deletes it; false when there was none.
inline bool stopWorker(QThread*& thread, const std::shared_ptr<std::atomic<bool>>& cancel) {
    if (!thread) return false;
    cancel->store(true);
    thread->wait();
    delete std::exchange(thread, nullptr);
    return true;
}

}  // namespace inferscope
