#pragma once

#include "routing/strategy.h"

namespace switchyard::routing {

// least-request: the replica with the fewest requests in flight from this gateway. It uses the
// gateway's own count, which is exact and immediate, not the engine's scraped metric, which lags
// by a scrape interval and would let a burst pile onto one replica.
class LeastRequestStrategy final : public Strategy {
 public:
  std::string_view name() const override { return "least-request"; }
  ScoreNote score(const ScoringContext& context, std::span<const uint32_t> candidate_indices,
                  std::span<double> scores, std::span<double> tiebreak) const override;
  bool autoBlendsLoadBalance() const override { return false; }
};

}  // namespace switchyard::routing
