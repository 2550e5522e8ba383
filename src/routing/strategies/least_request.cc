#include "routing/strategies/least_request.h"

namespace switchyard::routing {

ScoreNote LeastRequestStrategy::score(const ScoringContext& context,
                                      std::span<const uint32_t> candidate_indices,
                                      std::span<double> scores, std::span<double>) const {
  for (size_t i = 0; i < candidate_indices.size(); ++i) {
    const auto& replica = context.model.replicas[candidate_indices[i]];
    scores[i] = static_cast<double>(replica.state->globalRunning());
  }
  return {};
}

}  // namespace switchyard::routing
