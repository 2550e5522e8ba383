#pragma once

#include "routing/strategy.h"

namespace switchyard::routing {

// load-balance: load relative to learned capacity, with a KV-pressure penalty.
//   score = (running + λ·queued + 1) / capacity × (1 + α·(1 − kvFree)²)
// running is the in-flight count across gateways; queued the engine's waiting count (read only
// when λ > 0); capacity the output tokens/s the replica sustains at the reference concurrency,
// learned from its time per token (fleet/capacity_estimator.h; it does not scale with the
// replica's share of the traffic), or the mean of the candidates that have one, or 1 for all when
// none does; kvFree < kvCritical scores +Inf, unless every candidate is critical, in which case
// the most KV headroom wins. Ties: least GPU+CPU KV usage, then random. The "+1" is the cost of
// adding this request: it also ranks idle replicas by speed. See docs/routing.md.
class LoadBalanceStrategy final : public Strategy {
 public:
  std::string_view name() const override { return "load-balance"; }
  ScoreNote score(const ScoringContext& context, std::span<const uint32_t> candidate_indices,
                  std::span<double> scores, std::span<double> tiebreak) const override;
  bool autoBlendsLoadBalance() const override { return false; }
};

// load-balance-shape-aware: the same idea in units of replica time, using the request's own
// shape and capacities learned separately for prefill and decode:
//   cost_r(req) = prompt_tokens / prefill_r + output_tokens / decode_r
//   score       = ((running + λ·queued) × typical_cost_r + cost_r(req)) × KV penalty
// where typical_cost_r is the cost of the replica's average request so far. Where prefill or
// decode capacity is not learned yet it falls back to load-balance's score.
class ShapeAwareLoadBalanceStrategy final : public Strategy {
 public:
  std::string_view name() const override { return "load-balance-shape-aware"; }
  ScoreNote score(const ScoringContext& context, std::span<const uint32_t> candidate_indices,
                  std::span<double> scores, std::span<double> tiebreak) const override;
  bool autoBlendsLoadBalance() const override { return false; }
};

}  // namespace switchyard::routing
