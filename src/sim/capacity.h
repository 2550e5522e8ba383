// What a `load:` means: a fraction of the fleet's capacity, measured rather than assumed, as
// `switchyard demo` measures it: each GPU type alone (one replica, one gateway), saturated by the
// scenario's capacity-probe clients (64 by default) sending the workload's mix in a closed loop,
// started over 2 s and measured from 3 s on; capacity = output tokens/s over the window. Each
// probe is itself a simulation (the same engine model and gateway code).
#pragma once

#include <string>
#include <vector>

#include "sim/scenario.h"

namespace switchyard::sim {

struct TypeCapacity {
  std::string gpu;  // as the scenario names it
  double tokens_per_s = 0;
  double busy = 0;   // the probe replica's busy fraction over the window
  int replicas = 0;  // in the initial fleet
};

// One entry per GPU type of the fleet, in fleet order.
std::vector<TypeCapacity> measureCapacities(const Scenario& scenario);

// The open-loop rate for `load` (a fraction of the initial fleet's capacity), in requests/s.
double rateForLoad(const Scenario& scenario, const std::vector<TypeCapacity>& capacities,
                   double load);

}  // namespace switchyard::sim
