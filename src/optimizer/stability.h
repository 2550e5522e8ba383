// Stabilizer: keeps the optimizer's answers from flapping.
//  - Scale-down cool-down: a deployment never goes below the highest count the load asked for
//    within the last `scale_down_cooldown` (the solves' answers without these floors, recorded
//    with record(); they are lower bounds for the next solve); scaling up is never delayed.
//  - Hysteresis: the answer in force is kept while it still fits the new load and the new
//    optimum would save less than `hysteresis` of its cost.
// Pure: time is passed in. One instance per model, on the optimizer's control thread.
#pragma once

#include <deque>
#include <vector>

#include "core/clock.h"

namespace switchyard::optimizer {

struct StabilitySettings {
  double hysteresis = 0.05;
  TimeNs scale_down_cooldown = 60 * kNsPerSec;
};

class Stabilizer {
 public:
  explicit Stabilizer(StabilitySettings settings = {}) : settings_(settings) {}

  // Lower bounds for the solve at `now`: per deployment, the highest count answered within the
  // cool-down (0 for deployments never answered). `deployments` sizes the result.
  std::vector<int> floors(TimeNs now, size_t deployments) const;
  // Whether to keep `current` (still feasible for the load, costing `current_cost`) rather
  // than switch to a new optimum costing `new_cost`.
  bool keepCurrent(double current_cost, double new_cost) const {
    return new_cost >= current_cost * (1.0 - settings_.hysteresis);
  }
  // Records what the load asked for at `now` (the answer without the cool-down's floors).
  void record(TimeNs now, const std::vector<int>& replicas);
  // Forgets history (the deployments changed on reload).
  void reset() { history_.clear(); }
  const StabilitySettings& settings() const { return settings_; }

 private:
  struct Answer {
    TimeNs at = 0;
    std::vector<int> replicas;
  };
  StabilitySettings settings_;
  std::deque<Answer> history_;
};

}  // namespace switchyard::optimizer
