#include "fleet/capacity_tracker.h"

#include <cassert>

namespace switchyard::fleet {

CapacityEstimator& CapacityTracker::estimatorFor(
    const std::shared_ptr<ReplicaState>& replica,
    std::map<const ReplicaState*, std::pair<std::shared_ptr<ReplicaState>, CapacityEstimator>>&
        next) {
  auto it = estimators_.find(replica.get());
  return next
      .emplace(replica.get(), it != estimators_.end()
                                  ? std::move(it->second)
                                  : std::make_pair(replica, CapacityEstimator(settings_)))
      .first->second.second;
}

void CapacityTracker::refresh(const std::vector<std::shared_ptr<ReplicaState>>& replicas,
                              TimeNs now) {
  std::vector<CapacityCounters> counters;
  counters.reserve(replicas.size());
  for (const auto& replica : replicas) {
    counters.push_back(CapacityCounters::of(replica->counters()));
  }
  refresh(replicas, counters, now);
}

void CapacityTracker::refresh(const std::vector<std::shared_ptr<ReplicaState>>& replicas,
                              const std::vector<CapacityCounters>& counters, TimeNs now) {
  assert(counters.size() == replicas.size());
  // The same replicas as last time (the usual case): their estimators are known by position.
  bool same = replicas.size() == cached_.size();
  for (size_t i = 0; same && i < replicas.size(); ++i) same = replicas[i].get() == cached_[i].first;
  if (same) {
    for (size_t i = 0; i < replicas.size() && i < counters.size(); ++i) {
      CapacityEstimator& estimator = *cached_[i].second;
      estimator.observe(now, counters[i], static_cast<double>(replicas[i]->globalRunning()));
      replicas[i]->storeCapacity(estimator.learned());
    }
    return;
  }
  std::map<const ReplicaState*, std::pair<std::shared_ptr<ReplicaState>, CapacityEstimator>> next;
  for (size_t i = 0; i < replicas.size() && i < counters.size(); ++i) {
    const auto& replica = replicas[i];
    CapacityEstimator& estimator = estimatorFor(replica, next);
    estimator.observe(now, counters[i], static_cast<double>(replica->globalRunning()));
    replica->storeCapacity(estimator.learned());
  }
  estimators_ = std::move(next);
  cached_.clear();
  for (const auto& replica : replicas) {
    cached_.emplace_back(replica.get(), &estimators_.at(replica.get()).second);
  }
}

}  // namespace switchyard::fleet
