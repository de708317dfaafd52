// measureKvCost (kv_cost.h).
#include "engine/kv_cost.h"

#include <fmt/format.h>

namespace inferscope {

Result<KvCost> measureKvCost(Engine& engine, std::span<const int32_t> tokens, int32_t firstToken, KvType reference, KvType test,
                             const CancelCheck& cancel) {
    const int32_t n = int32_t(tokens.size());
    if (firstToken < 1 || firstToken >= n)
        return fail(ErrorKind::InvalidArgument, fmt::format("the first compared token must be in 1 to {}, got {}", n - 1, firstToken));
    KvCost cost;
    cost.reference = reference;
    cost.test = test;
    cost.firstToken = firstToken;
    DivergenceMeter meter;
    // The last position's logits predict no token of the sequence: it is not run.
    auto ok = engine.scoreWithKvTypes(reference, test, tokens.first(size_t(n - 1)),
                                      [&](int32_t pos, std::span<const float> ref, std::span<const float> tested) {
                                          if (pos + 1 < firstToken) return;
                                          const DistributionShift shift = compareDistributions(ref, tested);
                                          cost.perToken.push_back(shift);
                                          meter.add(shift);
                                      },
                                      cancel);
    if (!ok) return std::unexpected(ok.error());
    cost.meanKl = meter.meanKl();
    cost.p99Kl = meter.klQuantile(0.99);
    cost.maxKl = meter.maxKl();
    cost.sameTop1 = meter.sameTop1();
    cost.top1Agreement = meter.top1Agreement();
    return cost;
}

}  // namespace inferscope
