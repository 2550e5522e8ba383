// FleetHealth: the health decisions that follow from traffic, for every replica of a fleet
// (docs/operations.md): request outcomes, backoff and half-open, load outliers, slow replicas, and
// each model's count of routable replicas. One ReplicaHealth per replica; verdicts are published
// into the ReplicaStates that the routing filters read.
//
// Pure: time comes in, probes are run by the caller, which reports each result with onProbe().
// Two drivers: the gateway's HealthManager (probes over HTTP, a 100 ms tick on its control
// thread) and the fleet simulator (virtual time). Not thread-safe: one control thread.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/clock.h"
#include "fleet/fleet_snapshot.h"
#include "health/replica_health.h"

namespace switchyard::health {

class FleetHealth {
 public:
  explicit FleetHealth(HealthSettings settings) : settings_(std::move(settings)) {}
  FleetHealth(const FleetHealth&) = delete;  // each ReplicaHealth points at settings_
  FleetHealth& operator=(const FleetHealth&) = delete;

  // The fleet changed: track new replicas (calling `added` for each), forget removed ones.
  void sync(std::shared_ptr<const fleet::FleetSnapshot> snapshot,
            const std::function<void(const std::shared_ptr<fleet::ReplicaState>&)>& added = {});
  // Periodic evaluation (every 100 ms in the gateway). `wants_probe` is called for each replica
  // that should be probed now rather than at its next probe interval: a suspect one (its failures
  // wait for a confirming probe) or one whose backoff just ended.
  void tick(TimeNs now, const std::function<void(const fleet::ReplicaState&)>& wants_probe = {});
  // The result of one probe of `replica` (ignored when it is not tracked).
  void onProbe(const fleet::ReplicaState& replica, bool ok, TimeNs now);
  // Whether the replica's next probe must go out (it is suspect, excluded or half-open, or a
  // confirming probe is wanted): such probes are neither skipped nor held back by a budget.
  bool probeIsUrgent(const fleet::ReplicaState& replica) const;

  // Transitions so far, by reason of the state entered ("excluded:probe_failures", "healthy").
  const std::map<std::string, int64_t>& transitions() const { return transitions_; }
  const HealthSettings& settings() const { return settings_; }
  size_t tracked() const { return tracked_.size(); }

 private:
  struct Tracked {
    Tracked(std::shared_ptr<fleet::ReplicaState> r, const HealthSettings& settings)
        : replica(std::move(r)), health(settings) {}
    std::shared_ptr<fleet::ReplicaState> replica;
    ReplicaHealth health;
    // Smoothed time per output token and how many tokens it rests on (slow-replica detection).
    double token_time_ns = 0;
    double timed_tokens = 0;
    int64_t seen_token_time_ns = 0;
    int64_t seen_timed_tokens = 0;
  };
  void apply(Tracked& tracked, const Transition& t, TimeNs now);
  Tracked* find(const fleet::ReplicaState& replica) const;
  void detectLoadOutliers(size_t model, TimeNs now);
  void detectSlowReplicas(size_t model, TimeNs now);

  // Per model of the snapshot, aligned with its replicas (built by sync()).
  struct ModelView {
    std::vector<Tracked*> tracked;   // nullptr: not tracked
    std::vector<uint32_t> gpu_rank;  // the replica's GPU type among the model's, by name
    size_t gpu_count = 0;
    // The model's default strategy is SLO routing (every part of it), which loads each replica
    // as far as its profile predicts the SLO holds: uneven load there is the plan, not an
    // outlier, so load-outlier detection leaves the model alone.
    bool placed_by_prediction = false;
  };

  HealthSettings settings_;
  std::shared_ptr<const fleet::FleetSnapshot> snapshot_;
  // One record per replica, in fleet order (a tick walks them in a row), and where each is.
  std::vector<std::unique_ptr<Tracked>> tracked_;
  std::unordered_map<const fleet::ReplicaState*, size_t> index_;
  std::map<std::string, int64_t> transitions_;
  std::vector<ModelView> views_;
  // Scratch space reused by every tick.
  std::vector<std::pair<double, size_t>> scratch_loads_;
  std::vector<std::pair<double, size_t>> scratch_sorted_;
  std::vector<double> scratch_values_;
  std::vector<double> scratch_requests_;
  std::vector<double> scratch_times_;
  std::vector<std::vector<std::pair<double, Tracked*>>> scratch_by_gpu_;
};

}  // namespace switchyard::health
