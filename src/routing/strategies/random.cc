// random: every candidate scores the same, so the picker's uniform tie-break decides.
#include "routing/strategies/random.h"

namespace switchyard::routing {

ScoreNote RandomStrategy::score(const ScoringContext&, std::span<const uint32_t>,
                                std::span<double> scores, std::span<double>) const {
  for (double& s : scores) s = 0;
  return {};
}

}  // namespace switchyard::routing
