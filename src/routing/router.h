// Router: one routing decision = filters -> strategy scores (one strategy or a blend) -> picker.
//
// Pure: no I/O, no clock reads (time comes in the request), randomness from the caller's Rng.
// Allocation-free once the worker's RoutingScratch has grown to the fleet's size.
//
// Blends: each component's scores are min-max normalised over the candidates to [0, 1] (lower is
// better for every strategy, so no polarity flip is needed), +Inf becomes kInfPenalty (a strong
// penalty, not an exclusion: another strategy that likes the replica enough can still pick it),
// then weighted and summed. load-balance is added to a request's strategy with the snapshot's
// auto-blend weight when the strategy asks for it (Strategy::autoBlendsLoadBalance) and the
// weight is above 0.
#pragma once

#include "routing/decision.h"
#include "routing/strategy_spec.h"

namespace switchyard::routing {

struct RouteRequest {
  const StrategySpec* spec = nullptr;
  TimeNs now = 0;
  int exclude_replica = -1;  // a replica that already failed this request (failover)
  RequestShape shape;
};

inline constexpr double kInfPenalty = 2.0;

// Picks a replica of `model`. Decision.chosen is -1 when no replica is left to try.
Decision route(const fleet::FleetSnapshot& snapshot, const fleet::ModelEntry& model,
               const RouteRequest& request, Rng& rng, RoutingScratch& scratch);

// The picker on its own: the lowest score; among equal scores the lowest tie-break (when given);
// remaining ties are broken uniformly at random. Returns an index into `scores`, -1 when empty.
int pickLowest(std::span<const double> scores, std::span<const double> tiebreak, Rng& rng);

}  // namespace switchyard::routing
