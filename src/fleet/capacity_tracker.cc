#include "fleet/capacity_tracker.h"

namespace switchyard::fleet {

void CapacityTracker::refresh(const std::vector<std::shared_ptr<ReplicaState>>& replicas,
                              TimeNs now) {
  std::map<const ReplicaState*, std::pair<std::shared_ptr<ReplicaState>, CapacityEstimator>> next;
  for (const auto& replica : replicas) {
    auto it = estimators_.find(replica.get());
    auto& entry = next.emplace(replica.get(),
                               it != estimators_.end()
                                   ? std::move(it->second)
                                   : std::make_pair(replica, CapacityEstimator(settings_)))
                      .first->second;
    entry.second.observe(now, CapacityCounters::of(replica->counters()));
    replica->storeCapacity(entry.second.learned());
  }
  estimators_ = std::move(next);
}

}  // namespace switchyard::fleet
