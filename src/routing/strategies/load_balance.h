#pragma once

#include "routing/strategy.h"

namespace switchyard::routing {

// load-balance: load relative to learned capacity, with a KV-pressure penalty. Two scores
// (LoadBalanceParams::score):
//   requests-per-capacity  (running + λ·queued + 1) / capacity × (1 + α·(1 − kvFree)²)
//   utilization (default)  the output rate the replica is predicted to deliver with this request,
//                          over its capacity, × the same penalty:
//                          (running + λ·queued + 1) / t(running + 1) / capacity
//                          = (running + λ·queued + 1)·(1 + s·n_ref) / (n_ref·(1 + s·(running + 1)))
//                          with t(n) = t(0)·(1 + s·n) the learned batching curve and capacity =
//                          n_ref / t(n_ref) (fleet/capacity_estimator.h).
// Why utilisation: requests per token/s make in-flight counts proportional to capacity, but a
// replica that is faster per stream also finishes sooner, so it ends up with more than its share
// of the work (measured: 26 pp utilisation gap between L20 and A100; docs/routing.md). Dividing
// by the predicted rate instead counts load in the replica's own units.
// running is the in-flight count across gateways; queued the engine's waiting count (read only
// when λ > 0). A replica without an estimate is scored at the mean of the model's replicas that
// have one (fleet::LearnedMeans, refreshed by the control plane with the estimates); with no
// curve anywhere the requests-per-capacity form is used, with equal capacities when none is
// known. kvFree < kvCritical scores +Inf, unless every candidate is critical, in which
// case the most KV headroom wins. Ties: least GPU+CPU KV usage, then random. The "+1" is the cost
// of adding this request: it also ranks idle replicas. See docs/routing.md.
class LoadBalanceStrategy final : public Strategy {
 public:
  std::string_view name() const override { return "load-balance"; }
  ScoreNote score(const ScoringContext& context, std::span<const uint32_t> candidate_indices,
                  std::span<double> scores, std::span<double> tiebreak) const override;
  bool autoBlendsLoadBalance() const override { return false; }
};

// load-balance-shape-aware: load-balance with the request's own shape, priced at capacities
// learned separately for prefill and decode:
//   cost_r(req) = prompt_tokens / prefill_r + output_tokens / decode_r
// With the utilization score the request counts as cost_r(req) / typical_cost_r requests (its
// size relative to the replica's average request so far, in that replica's own terms) instead of
// 1, and the band's key is its predicted time there (prefill + output × t(running + 1)). With
// requests-per-capacity: ((running + λ·queued) × typical_cost_r + cost_r(req)) × KV penalty, in
// replica-seconds. Where prefill or decode capacity is not learned yet it scores like
// load-balance.
class ShapeAwareLoadBalanceStrategy final : public Strategy {
 public:
  std::string_view name() const override { return "load-balance-shape-aware"; }
  ScoreNote score(const ScoringContext& context, std::span<const uint32_t> candidate_indices,
                  std::span<double> scores, std::span<double> tiebreak) const override;
  bool autoBlendsLoadBalance() const override { return false; }
};

}  // namespace switchyard::routing
