// libFuzzer target: the body a server answers GET /slots with, as the app reads it
// (gui/remote/slot_report.h; ServerSlots caps the body at 64 KiB before). Besides the sanitizers
// it checks what the slots card relies on: a report it accepts has at most kMaxSlots slots, each
// slot's tokens within its share and its bytes in use within its reservation, the totals the sums
// of the slots' and the last batch no larger than the largest; a refusal says why, in a short
// sentence of the app's own (never the body's text: no byte of it past the limit below).

#include <QByteArray>
#include <cstdint>

#include "remote/slot_report.h"
#include "require.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    using namespace inferscope;
    const QByteArray body(reinterpret_cast<const char*>(data), qsizetype(size));
    const auto report = parseSlotReport(body);
    if (!report) {
        FUZZ_REQUIRE(!report.error().reason.isEmpty(), "a refusal says why");
        FUZZ_REQUIRE(report.error().reason.size() <= 160, "a refusal is a short sentence, not the body");
        return 0;
    }
    FUZZ_REQUIRE(report->perSlot.size() <= size_t(kMaxSlots), "at most kMaxSlots slots");
    int64_t capacity = 0, used = 0, reserved = 0;
    for (const SlotFigures& s : report->perSlot) {
        FUZZ_REQUIRE(s.kvTokens >= 0 && s.kvTokens <= s.kvCapacity && s.kvCapacity <= kMaxSlotTokens, "tokens within the share");
        FUZZ_REQUIRE(s.kvBytesUsed >= 0 && s.kvBytesUsed <= s.kvBytesReserved && s.kvBytesReserved <= kMaxSlotBytes, "bytes within the reservation");
        capacity += s.kvCapacity;
        used += s.kvBytesUsed;
        reserved += s.kvBytesReserved;
    }
    FUZZ_REQUIRE(capacity == report->budgetTokens && used == report->bytesUsed && reserved == report->bytesReserved, "totals are the sums");
    FUZZ_REQUIRE(report->lastBatch <= report->largestBatch && report->largestBatch <= int64_t(report->perSlot.size()), "batches within the slots");
    FUZZ_REQUIRE(report->decodeTokensPerSecond >= 0 && report->decodeTokensPerSecond <= kMaxTokensPerSecond, "a rate in range");
    const bool prefixSaid = report->prefixCopies >= 0 && report->prefixCopies <= kMaxCount && report->prefixTokensCopied >= 0 &&
                            report->prefixTokensCopied <= kMaxCount;
    FUZZ_REQUIRE(prefixSaid || (report->prefixCopies == -1 && report->prefixTokensCopied == -1), "prefix copies both said, in range, or neither");
    return 0;
}
