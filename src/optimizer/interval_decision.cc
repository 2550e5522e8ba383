#include "optimizer/interval_decision.h"

namespace switchyard::optimizer {

IntervalDecision decideInterval(MixProblem problem, Stabilizer& stabilizer,
                                const std::vector<int>& in_force, TimeNs now,
                                const SolveOptions& options) {
  // What the load alone asks for is what the cool-down remembers: remembering the answers put
  // in force would make each one the next one's floor, and with an interval shorter than the
  // cool-down the fleet could never shrink.
  const Recommendation asked = recommend(problem, options);
  const std::vector<int> floors = stabilizer.floors(now, problem.deployments.size());
  bool floored = false;
  for (size_t d = 0; d < problem.deployments.size(); ++d) {
    problem.deployments[d].lower = floors[d];
    floored = floored || (d < asked.replicas.size() && asked.replicas[d] < floors[d]);
  }
  IntervalDecision decision;
  decision.answer = floored ? recommend(problem, options) : asked;
  const Recommendation& r = decision.answer;
  // Hysteresis: keep the answer in force while it still fits and the saving is small.
  if (r.feasible && !r.no_load && in_force.size() == problem.deployments.size() &&
      in_force != r.replicas) {
    MixProblem fixed = problem;
    bool above_floors = true;
    for (size_t d = 0; d < fixed.deployments.size(); ++d) {
      fixed.deployments[d].lower = fixed.deployments[d].upper = in_force[d];
      above_floors = above_floors && in_force[d] >= floors[d];
    }
    const Recommendation current = recommend(fixed, options);
    if (above_floors && current.feasible && stabilizer.keepCurrent(current.cost, r.cost)) {
      decision.kept_current = true;
      decision.answer.replicas = current.replicas;
      decision.answer.slices = current.slices;
      decision.answer.cost = current.cost;
    }
  }
  stabilizer.record(now, asked.replicas);
  return decision;
}

}  // namespace switchyard::optimizer
