// One interval's answer, as the optimize service puts it in force (docs/optimizer.md): the
// stabilizer's scale-down floors become lower bounds, the problem is solved, and the answer in
// force is kept while it still fits the new load and the new optimum would save less than the
// hysteresis. What the load alone asked for (the solve without floors) is recorded in the
// stabilizer, so the cool-down delays a scale-down by its length and no more. The optimize service
// (gateway/optimize_service.cc) and the fleet simulator's autoscaling (src/sim/) both decide
// with this.
// Pure apart from the solver's wall-clock time limit.
#pragma once

#include <vector>

#include "core/clock.h"
#include "optimizer/optimizer.h"
#include "optimizer/stability.h"

namespace switchyard::optimizer {

struct IntervalDecision {
  Recommendation answer;      // what to put in force (the kept one when kept_current)
  bool kept_current = false;  // hysteresis kept the answer in force
};

// `problem`'s deployments' `lower` are replaced by the stabilizer's floors at `now`; `in_force`
// is the answer in force (empty: none yet).
IntervalDecision decideInterval(MixProblem problem, Stabilizer& stabilizer,
                                const std::vector<int>& in_force, TimeNs now,
                                const SolveOptions& options);

}  // namespace switchyard::optimizer
