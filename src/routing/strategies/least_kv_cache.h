#pragma once

#include "routing/strategy.h"

namespace switchyard::routing {

// least-kv-cache: the replica with the most free KV cache (engine-reported GPU KV usage; stale
// telemetry counts as the worst fresh value, see load_signals.h). Ties: fewer requests in flight.
class LeastKvCacheStrategy final : public Strategy {
 public:
  std::string_view name() const override { return "least-kv-cache"; }
  ScoreNote score(const ScoringContext& context, std::span<const uint32_t> candidate_indices,
                  std::span<double> scores, std::span<double> tiebreak) const override;
};

}  // namespace switchyard::routing
