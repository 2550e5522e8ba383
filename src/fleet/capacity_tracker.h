// CapacityTracker: one CapacityEstimator per replica of the fleet, refreshed by the control
// thread on a timer; publishes each estimate into its ReplicaState for the routing strategies.
// Replicas that left the fleet are forgotten at the next refresh. Control thread only.
#pragma once

#include <map>
#include <memory>
#include <vector>

#include "fleet/capacity_estimator.h"

namespace switchyard::fleet {

class CapacityTracker {
 public:
  explicit CapacityTracker(CapacitySettings settings = {}) : settings_(settings) {}

  void refresh(const std::vector<std::shared_ptr<ReplicaState>>& replicas, TimeNs now);

 private:
  CapacitySettings settings_;
  std::map<const ReplicaState*, std::pair<std::shared_ptr<ReplicaState>, CapacityEstimator>>
      estimators_;
};

}  // namespace switchyard::fleet
