#include "routing/strategies/least_kv_cache.h"

#include "routing/strategies/load_signals.h"

namespace switchyard::routing {

ScoreNote LeastKvCacheStrategy::score(const ScoringContext& context,
                                      std::span<const uint32_t> candidates,
                                      std::span<double> scores,
                                      std::span<double> tiebreak) const {
  internal::gatherInputs(context, candidates);
  for (size_t i = 0; i < candidates.size(); ++i) {
    scores[i] = context.inputs[i].kv_usage;
    tiebreak[i] = context.inputs[i].running;
  }
  ScoreNote note;
  note.eased = true;
  return note;
}

}  // namespace switchyard::routing
