// Router: one routing decision = filters -> strategy scores -> picker.
//
// Pure: no I/O, no clock reads (time comes in the request), randomness from the caller's Rng.
// Allocation-free once the worker's RoutingScratch has grown to the fleet's size.
#pragma once

#include "routing/decision.h"
#include "routing/strategy.h"

namespace switchyard::routing {

struct RouteRequest {
  const Strategy* strategy = nullptr;
  TimeNs now = 0;
  int exclude_replica = -1;  // a replica that already failed this request (failover)
};

// Picks a replica of `model`. Decision.chosen is -1 when no replica is left to try.
Decision route(const fleet::FleetSnapshot& snapshot, const fleet::ModelEntry& model,
               const RouteRequest& request, Rng& rng, RoutingScratch& scratch);

// The picker on its own: the lowest score; exact ties are broken uniformly at random.
// Returns an index into `scores`, or -1 when empty.
int pickLowest(std::span<const double> scores, Rng& rng);

}  // namespace switchyard::routing
