#include "routing/strategies/least_request.h"

namespace switchyard::routing {

void LeastRequestStrategy::score(const ScoringContext& context,
                                 std::span<const uint32_t> candidate_indices,
                                 std::span<double> scores) const {
  for (size_t i = 0; i < candidate_indices.size(); ++i) {
    const auto& replica = context.model.replicas[candidate_indices[i]];
    scores[i] = static_cast<double>(
        replica.state->counters().running.load(std::memory_order_relaxed));
  }
}

}  // namespace switchyard::routing
