#pragma once

#include "routing/strategy.h"

namespace switchyard::routing {

// round-robin: a per-model cursor (shared by all workers, one relaxed fetch_add per request)
// advances over the candidates; the candidate at the cursor scores 0, the next 1, and so on.
class RoundRobinStrategy final : public Strategy {
 public:
  std::string_view name() const override { return "round-robin"; }
  ScoreNote score(const ScoringContext& context, std::span<const uint32_t> candidate_indices,
                  std::span<double> scores, std::span<double> tiebreak) const override;
  bool autoBlendsLoadBalance() const override { return false; }
  bool samplesCandidates() const override { return false; }
};

}  // namespace switchyard::routing
