#include "routing/strategies/least_request_top_k.h"

#include <algorithm>
#include <limits>

#include "routing/slow_start.h"

namespace switchyard::routing {

ScoreNote LeastRequestTopKStrategy::score(const ScoringContext& context,
                                          std::span<const uint32_t> candidates,
                                          std::span<double> scores, std::span<double>) const {
  for (size_t i = 0; i < candidates.size(); ++i) {
    context.inputs[i].running =
        static_cast<double>(context.model.replicas[candidates[i]].state->globalRunning());
  }
  computeSlowStart(context, candidates);
  double lowest = std::numeric_limits<double>::infinity();
  for (size_t i = 0; i < candidates.size(); ++i) {
    scores[i] = context.inputs[i].running + context.inputs[i].synthetic_load;
    lowest = std::min(lowest, scores[i]);
  }
  const fleet::TopKParams& p = context.model.top_k;
  ScoreNote note;
  note.eased = true;
  note.top_k = p.k;
  // Absolute at low load (one request apart is noise between gateways' views), relative at high
  // load (ten requests apart among hundred-request batches is the same latency).
  note.tolerance = std::max(p.tolerance_requests, p.tolerance_fraction * std::max(0.0, lowest));
  return note;
}

}  // namespace switchyard::routing
