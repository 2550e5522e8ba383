// CapacityTracker: one CapacityEstimator per replica of the fleet, refreshed by the control
// thread on a timer; publishes each estimate into its ReplicaState for the routing strategies.
// Each refresh also samples the replica's in-flight count across gateways (globalRunning()), the
// concurrency at which its time per token was measured (see capacity_estimator.h).
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

  // Reads each replica's own counters.
  void refresh(const std::vector<std::shared_ptr<ReplicaState>>& replicas, TimeNs now);
  // Counters supplied by the caller (e.g. summed over several gateways), counters[i] for
  // replicas[i]; the concurrency is still sampled from the replica.
  void refresh(const std::vector<std::shared_ptr<ReplicaState>>& replicas,
               const std::vector<CapacityCounters>& counters, TimeNs now);

 private:
  CapacityEstimator& estimatorFor(
      const std::shared_ptr<ReplicaState>& replica,
      std::map<const ReplicaState*, std::pair<std::shared_ptr<ReplicaState>, CapacityEstimator>>&
          next);

  CapacitySettings settings_;
  std::map<const ReplicaState*, std::pair<std::shared_ptr<ReplicaState>, CapacityEstimator>>
      estimators_;
  // The last refresh's replicas in order, with their estimators (map nodes do not move): a
  // refresh over the same replicas skips the map.
  std::vector<std::pair<const ReplicaState*, CapacityEstimator*>> cached_;
};

}  // namespace switchyard::fleet
