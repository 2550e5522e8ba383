#pragma once

#include "routing/strategy.h"

namespace switchyard::routing {

class RandomStrategy final : public Strategy {
 public:
  std::string_view name() const override { return "random"; }
  ScoreNote score(const ScoringContext& context, std::span<const uint32_t> candidate_indices,
                  std::span<double> scores, std::span<double> tiebreak) const override;
  bool autoBlendsLoadBalance() const override { return false; }
};

}  // namespace switchyard::routing
