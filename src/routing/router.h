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
  std::span<const int> tried;  // replicas that already failed this request (failover)
  RequestShape shape;
  bool dry_run = false;  // score for a debug view: no state (e.g. round-robin's cursor) moves
  int preferred = -1;    // a replica to keep if it passes the filters (a session's pin)
  // Only replicas whose `gpu` label is this (the request's x-switchyard-gpu header: a hardware
  // class the client asks for); empty: any.
  std::string_view gpu;
  // Prefix-cache routing: the request's prompt blocks and the worker's index (nullptr: none).
  const PrefixProbe* prefix = nullptr;
};

inline constexpr double kInfPenalty = 2.0;

// Picks a replica of `model`. Filters, in order: tried (failed this request), draining / not
// ready (the replica's lifecycle: counted in Decision.unavailable), saturated (at
// `model.limits.max_inflight_per_replica`), unhealthy / half-open-busy. If health alone would
// leave no candidate, health is ignored (protection must not turn a partial degradation into an
// outage) and Decision.health_fallback is set; draining and not-ready replicas are never brought
// back that way (they are leaving or not serving: that is not a degradation routing may paper
// over). Decision.chosen is -1 when nothing is left: no
// replicas, all tried, or all saturated (Decision.saturated tells which). A `preferred` replica
// that passes the filters is chosen without scoring (Decision.affinity); one that does not is
// routed around like any other excluded replica.
Decision route(const fleet::FleetSnapshot& snapshot, const fleet::ModelEntry& model,
               const RouteRequest& request, Rng& rng, RoutingScratch& scratch);

// The picker on its own: the lowest score; among equal scores the lowest tie-break (when given);
// remaining ties are broken uniformly at random. Returns an index into `scores`, -1 when empty.
int pickLowest(std::span<const double> scores, std::span<const double> tiebreak, Rng& rng);

// The top-K picker: uniform among the up to `k` lowest finite scores that are within
// `tolerance` of the minimum. When several replicas tie for the K-th place they share the
// places left, so every replica strictly inside the set has probability 1/K and a tie is never
// settled by fleet order. `work` must hold scores.size() entries (per-worker scratch: no
// allocation); `cutoff` receives the highest score in the set. Falls back to pickLowest when
// no score is finite. O(n) expected.
int pickTopK(std::span<const double> scores, uint32_t k, double tolerance, Rng& rng,
             std::span<uint32_t> work, double* cutoff);

// The band picker: among the finite scores within `band` of the minimum, the lowest `tiebreak`
// wins; equal ones at random. `cutoff` receives min + band. Falls back to pickLowest when no
// score is finite.
int pickWithinBand(std::span<const double> scores, double band, std::span<const double> tiebreak,
                   Rng& rng, double* cutoff);

}  // namespace switchyard::routing
