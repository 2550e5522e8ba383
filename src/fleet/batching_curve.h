// How routing and health read a replica's learned batching curve, time per token
// t(n) = t(0)·(1 + slowdown·n) (LearnedCapacity::slowdown), so that the load-balance score and
// the load-outlier gate agree on what "equally loaded" means.
#pragma once

#include <algorithm>

#include "fleet/replica_state.h"

namespace switchyard::fleet {

// A replica's own slowdown is noisy (its fit leans on how the load happened to vary): it is
// pulled three quarters of the way to the model's mean and capped at a knee of 8 streams, so
// one wild fit cannot flatten a score (a steep curve makes predicted utilisation saturate and
// stop counting load). `own` NaN (no fit yet): the mean.
inline constexpr double kOwnCurveWeight = 0.25;
inline constexpr double kMaxSlowdown = 1.0 / 8;

inline double shrunkSlowdown(double own, double mean) {
  const double center = std::min(mean, kMaxSlowdown);
  const double mine = own >= 0 ? std::min(own, kMaxSlowdown) : center;
  return center + kOwnCurveWeight * (mine - center);
}

}  // namespace switchyard::fleet
