#include "routing/router.h"

namespace switchyard::routing {

std::string_view exclusionName(Exclusion reason) {
  switch (reason) {
    case Exclusion::kNone:
      return "none";
    case Exclusion::kFailedThisRequest:
      return "failed_this_request";
  }
  return "unknown";
}

int pickLowest(std::span<const double> scores, Rng& rng) {
  int best = -1;
  uint32_t ties = 0;
  for (size_t i = 0; i < scores.size(); ++i) {
    if (best < 0 || scores[i] < scores[best]) {
      best = static_cast<int>(i);
      ties = 1;
    } else if (scores[i] == scores[best]) {
      // Reservoir sampling over the tied minimum: each tie wins with equal probability.
      ++ties;
      if (rng.below(ties) == 0) best = static_cast<int>(i);
    }
  }
  return best;
}

Decision route(const fleet::FleetSnapshot& snapshot, const fleet::ModelEntry& model,
               const RouteRequest& request, Rng& rng, RoutingScratch& scratch) {
  Decision decision;
  decision.strategy = request.strategy->name();
  const size_t n = model.replicas.size();
  decision.ready = static_cast<uint32_t>(n);
  scratch.rows.resize(n);
  scratch.candidates.clear();
  for (uint32_t i = 0; i < n; ++i) {
    scratch.rows[i] = CandidateRow{i, Exclusion::kNone, 0};
    if (static_cast<int>(i) == request.exclude_replica) {
      scratch.rows[i].excluded = Exclusion::kFailedThisRequest;
      continue;
    }
    scratch.candidates.push_back(i);
  }
  decision.rows = scratch.rows;
  decision.candidates = static_cast<uint32_t>(scratch.candidates.size());
  if (scratch.candidates.empty()) return decision;

  scratch.scores.resize(scratch.candidates.size());
  ScoringContext context{snapshot, model, request.now, rng};
  request.strategy->score(context, scratch.candidates, scratch.scores);
  for (size_t i = 0; i < scratch.candidates.size(); ++i) {
    scratch.rows[scratch.candidates[i]].score = scratch.scores[i];
  }
  const int picked = pickLowest(scratch.scores, rng);
  decision.chosen = static_cast<int>(scratch.candidates[picked]);
  return decision;
}

}  // namespace switchyard::routing
