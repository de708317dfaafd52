// libFuzzer target: the body a server answers GET /slots with, as the app reads it
// (gui/remote/slot_report.h; ServerSlots caps the body at 64 KiB before). Besides the sanitizers
// it checks what the slots card relies on: a report it accepts has at most kMaxSlots slots, each
// slot's tokens within its share and its bytes in use within its reservation, the totals the sums
// of the slots' and the last batch no larger than the largest; a refusal says why, in a short
// sentence of the app's own (never the body's text: no byte of it past the limit below).

#include <QByteArray>
#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include "remote/slot_report.h"

namespace {

void require(bool condition, const char* what) {
    if (condition) return;
    std::fprintf(stderr, "fuzz_slot_report: broken property: %s\n", what);
    std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    using namespace inferscope;
    const QByteArray body(reinterpret_cast<const char*>(data), qsizetype(size));
    const auto report = parseSlotReport(body);
    if (!report) {
        require(!report.error().reason.isEmpty(), "a refusal says why");
        require(report.error().reason.size() <= 160, "a refusal is a short sentence, not the body");
        return 0;
    }
    require(report->perSlot.size() <= size_t(kMaxSlots), "at most kMaxSlots slots");
    int64_t capacity = 0, used = 0, reserved = 0;
    for (const SlotFigures& s : report->perSlot) {
        require(s.kvTokens >= 0 && s.kvTokens <= s.kvCapacity && s.kvCapacity <= kMaxSlotTokens, "tokens within the share");
        require(s.kvBytesUsed >= 0 && s.kvBytesUsed <= s.kvBytesReserved && s.kvBytesReserved <= kMaxSlotBytes, "bytes within the reservation");
        capacity += s.kvCapacity;
        used += s.kvBytesUsed;
        reserved += s.kvBytesReserved;
    }
    require(capacity == report->budgetTokens && used == report->bytesUsed && reserved == report->bytesReserved, "totals are the sums");
    require(report->lastBatch <= report->largestBatch && report->largestBatch <= int64_t(report->perSlot.size()), "batches within the slots");
    require(report->decodeTokensPerSecond >= 0 && report->decodeTokensPerSecond <= kMaxTokensPerSecond, "a rate in range");
    return 0;
}
