#pragma once

#include "routing/strategy.h"

namespace switchyard::routing {

class RandomStrategy final : public Strategy {
 public:
  std::string_view name() const override { return "random"; }
  void score(const ScoringContext& context, std::span<const uint32_t> candidate_indices,
             std::span<double> scores) const override;
};

}  // namespace switchyard::routing
