#pragma once
// SlotReport: what `inferscope-cli serve` says of its slots at GET /slots (server/server_metrics.cpp,
// slotsJson), read from a body the app does not trust (ServerSlots caps it at 64 KiB first). Pure:
// no network. Every field the view shows is checked for its type and range, the slots are at most
// kMaxSlots, each slot's tokens fit its share and its bytes in use fit what it reserves, and the
// totals are the sums of the slots'; anything else refuses the whole report with the reason. A
// reason names fields and numbers only, never text from the body. Fields the app does not read
// are ignored (a newer server may add some).

#include <QByteArray>
#include <QString>
#include <cstdint>
#include <expected>
#include <vector>

namespace inferscope {

struct SlotFigures {
    int64_t id = 0;
    bool generating = false;  // "generating", else "idle"
    int64_t kvTokens = 0;     // positions its KV cache holds
    int64_t kvCapacity = 0;   // its share of the budget, in positions
    int64_t kvBytesUsed = 0, kvBytesReserved = 0;
    int64_t requests = 0;     // requests it has served
    bool operator==(const SlotFigures&) const = default;
};

struct SlotReport {
    std::vector<SlotFigures> perSlot;
    int64_t budgetTokens = 0;  // --ctx: the slots' shares together
    int64_t bytesUsed = 0, bytesReserved = 0;
    int64_t queue = 0;         // requests waiting for a slot
    int64_t decoding = 0;      // slots between their prefill and their last token
    int64_t lastBatch = 0, largestBatch = 0;  // sequences in a decode step: the last, the most so far
    double decodeTokensPerSecond = 0;         // all slots together, over the server's last seconds
    // The slots' shared prefix cache: prompts that started from another slot's cached prefix, and
    // the positions so copied; -1 when the server does not say (one older than these fields).
    int64_t prefixCopies = -1, prefixTokensCopied = -1;
};

struct SlotReportError {
    QString reason;
    bool otherFormat = false;  // a JSON list: another server's /slots (llama.cpp's), not a broken report
};

inline constexpr int kMaxSlots = 64;
inline constexpr int64_t kMaxSlotTokens = int64_t(1) << 24;   // positions in one slot's share (16M)
inline constexpr int64_t kMaxSlotBytes = int64_t(1) << 50;    // 1 PiB of KV cache in one slot
inline constexpr int64_t kMaxCount = int64_t(1) << 50;        // requests served, queued
inline constexpr double kMaxTokensPerSecond = 1e7;

std::expected<SlotReport, SlotReportError> parseSlotReport(const QByteArray& body);

}  // namespace inferscope
