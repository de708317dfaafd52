// The slots' line without engines: first come first served, a bounded queue, leaving it, the
// free slot sharing the longest prefix, and many threads at once (also run under ThreadSanitizer).
#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <thread>

#include "server/admission.h"
#include "server/http/exchange.h"

using namespace inferscope::server;

namespace {

struct Line {
    explicit Line(size_t slots, size_t queue) : caches(slots), admission(slots, queue, [this](size_t s) { return std::span<const int32_t>(caches[s]); }) {}
    std::vector<std::vector<int32_t>> caches;
    Admission admission;
    std::mutex mutex;
    std::vector<std::pair<int, size_t>> served;  // (request, slot) in the order slots were given
    Admission::OnSlot serve(int request) {
        return [this, request](size_t slot) {
            std::lock_guard lock(mutex);
            served.emplace_back(request, slot);
        };
    }
};

}  // namespace

TEST(Admission, PickSlotTakesTheLongestSharedPrefix) {
    const std::vector<int32_t> prompt{1, 2, 3, 4};
    const std::vector<int32_t> a{1, 2}, b{1, 2, 3, 9}, c{7};
    EXPECT_EQ(pickSlot({a, b, c}, prompt), 1);
    EXPECT_EQ(pickSlot({c, a}, prompt), 1);
    EXPECT_EQ(pickSlot({c, c}, prompt), 0);  // nothing shared: the first free slot
    EXPECT_EQ(pickSlot({}, prompt), -1);
}

TEST(Admission, FirstComeFirstServedWithABoundedQueue) {
    Line line(1, 2);
    auto t1 = line.admission.enter();
    auto t2 = line.admission.enter();
    auto t3 = line.admission.enter();
    ASSERT_TRUE(t1 && t2 && t3);
    EXPECT_FALSE(line.admission.enter());  // one slot + two waiting: full
    // The second and third are ready before the first: they still wait for it.
    line.admission.ready(*t3, {3}, line.serve(3));
    line.admission.ready(*t2, {2}, line.serve(2));
    EXPECT_TRUE(line.served.empty());
    line.admission.ready(*t1, {1}, line.serve(1));
    ASSERT_EQ(line.served.size(), 1u);
    EXPECT_EQ(line.served[0].first, 1);
    EXPECT_EQ(line.admission.waiting(), 2u);
    EXPECT_EQ(line.admission.idle(), 0u);
    line.admission.release(0);
    line.admission.release(0);
    ASSERT_EQ(line.served.size(), 3u);
    EXPECT_EQ(line.served[1].first, 2);
    EXPECT_EQ(line.served[2].first, 3);
    EXPECT_EQ(line.admission.waiting(), 0u);
}

TEST(Admission, LeavingFreesThePlaceAndLetsTheNextGo) {
    Line line(1, 1);
    auto t1 = line.admission.enter();
    auto t2 = line.admission.enter();
    ASSERT_TRUE(t1 && t2);
    line.admission.ready(*t2, {2}, line.serve(2));
    EXPECT_TRUE(line.admission.leave(*t1));  // gone before its prompt was known
    ASSERT_EQ(line.served.size(), 1u);
    EXPECT_EQ(line.served[0].first, 2);
    EXPECT_FALSE(line.admission.leave(*t2));  // already served: its slot is released instead
    EXPECT_TRUE(line.admission.enter());
}

TEST(Admission, AFreeSlotHoldingThePromptsPrefixIsPreferred) {
    Line line(3, 0);
    line.caches[2] = {5, 6, 7};
    auto t = line.admission.enter();
    ASSERT_TRUE(t);
    line.admission.ready(*t, {5, 6, 7, 8}, line.serve(1));
    ASSERT_EQ(line.served.size(), 1u);
    EXPECT_EQ(line.served[0].second, 2u);
}

TEST(Admission, ManyThreadsEverySlotGivenOnceAtATime) {
    constexpr int kThreads = 8, kEach = 200;
    Line line(2, 64);
    std::atomic<int> inSlot[2] = {0, 0};
    std::atomic<int> done{0}, refused{0}, overlap{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t)
        threads.emplace_back([&, t] {
            for (int i = 0; i < kEach; ++i) {
                auto ticket = line.admission.enter();
                if (!ticket) {
                    ++refused;
                    continue;
                }
                if ((t + i) % 7 == 0 && line.admission.leave(*ticket)) continue;
                line.admission.ready(*ticket, {t, i}, [&](size_t slot) {
                    if (inSlot[slot]++ != 0) ++overlap;
                    --inSlot[slot];
                    ++done;
                    line.admission.release(slot);
                });
            }
        });
    for (auto& th : threads) th.join();
    EXPECT_EQ(overlap.load(), 0);
    EXPECT_EQ(line.admission.waiting(), 0u);
    EXPECT_EQ(line.admission.idle(), 2u);
    EXPECT_GT(done.load(), 0);
}

TEST(Exchange, ASlowReaderHoldsTheWriterBackAndAGoneOneReleasesIt) {
    inferscope::server::http::Exchange ex({}, "{}", -1, 10);
    ex.startStream(200, "text/event-stream", {});
    std::atomic<int> sent{0};
    std::thread writer([&] {
        while (ex.send("12345")) ++sent;  // 5 bytes each against a limit of 10
    });
    // The transport takes what is pending and frees room for it, twice.
    int taken = 0;
    while (taken < 2) {
        auto p = ex.take();
        if (!p.data.empty()) {
            ex.wrote(p.data.size());
            ++taken;
        }
        std::this_thread::yield();
    }
    ex.markGone();  // the client leaves: the writer's send() returns false
    writer.join();
    EXPECT_GE(sent.load(), 2);
    EXPECT_TRUE(ex.gone());
    ex.finish();
    EXPECT_TRUE(ex.complete());
}
