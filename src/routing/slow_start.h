// Slow start: eases a replica that just became ready into traffic, instead of letting its empty
// queue make it the least-loaded replica for every decision (the new-replica stampede; with
// several gateways each one picks it before the shared counts catch up).
//
// A replica is warming for `ramp` after ReplicaState::readySince() (it joined a running fleet or
// came back from a health exclusion). While warming it carries a synthetic load
//
//   synthetic = mean in-flight of the established candidates × (1 − progress^(1/aggression))
//   progress  = (now − ready_since) / ramp
//
// Under least-request-style picking a replica is chosen while its load is the lowest, so its
// real in-flight count settles near mean × progress^(1/aggression): with aggression 1 its share
// of traffic grows linearly from nothing to a full share over the ramp. The baseline is the
// established replicas' mean, not the minimum over all (the warming replica is usually that
// minimum, which would cancel the penalty), and not their minimum (one nearly idle established
// replica would let the new one in at once). With no established candidate (every replica new)
// nobody is penalised: there is no baseline to ramp toward.
//
// Pure: time comes from the ScoringContext; no allocation. Called per decision by the strategies
// that read load (least-request-top-k, and load-balance through gatherInputs).
#pragma once

#include <span>

#include "routing/strategy.h"

namespace switchyard::routing {

// Progress through the ramp, in [0, 1]; 1 for established replicas, a finished ramp, or a
// disabled one (ramp 0).
double slowStartProgress(TimeNs ready_since, TimeNs now, const fleet::SlowStartParams& params);

// How far a replica at `progress` is trusted: progress^(1/aggression), in [0, 1].
double slowStartTrust(double progress, double aggression);

struct SlowStartSummary {
  uint32_t warming = 0;         // candidates still inside their ramp
  double established_load = 0;  // mean in-flight of the others
};

// Reads context.inputs[i].running (the caller has filled it with the real load) and writes
// inputs[i].warmth and inputs[i].synthetic_load for each candidate. Does not add the synthetic
// load to `running`: callers decide where it goes.
SlowStartSummary computeSlowStart(const ScoringContext& context,
                                  std::span<const uint32_t> candidates);

namespace internal {

// load-balance's part (called from gatherInputs once every input is read): a warming replica
// carries its synthetic load in `running`, and its learned capacities, measured on a trickle of
// traffic, are blended toward the established replicas' mean as trust grows:
//   capacity = trust × learned + (1 − trust) × established mean
// (unchanged where either side is unknown: load-balance then uses the mean anyway).
void easeInWarming(const ScoringContext& context, std::span<const uint32_t> candidates);

}  // namespace internal
}  // namespace switchyard::routing
