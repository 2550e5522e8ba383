// HealthManager: keeps every replica's health on the control thread and publishes the verdicts
// into the ReplicaStates that the routing filters read.
//
// Inputs: request outcomes counted by the workers (read every tick), background probes of each
// replica's health path (every probe interval, and at once as a confirming probe when a replica
// turns suspect), and load outliers (per model, load relative to learned capacity). Every
// transition is logged with its reason and counted. Also publishes each model's number of
// routable replicas (for the model-wide rate limit). Not thread-safe: control thread only.
// At scale: a healthy replica whose requests succeeded since its last probe round is not probed
// (traffic is the better proof), and routine probes share a per-second budget.
#pragma once

#include <boost/asio/io_context.hpp>
#include <map>
#include <memory>
#include <string>

#include "core/clock.h"
#include "fleet/fleet_snapshot.h"
#include "fleet/scrape_schedule.h"
#include "health/replica_health.h"

namespace switchyard::health {

class HealthManager {
 public:
  HealthManager(boost::asio::io_context& io, const Clock& clock, HealthSettings settings);
  ~HealthManager();

  // The fleet changed: track new replicas, forget removed ones.
  void sync(std::shared_ptr<const fleet::FleetSnapshot> snapshot);
  // Periodic evaluation (the gateway calls it every 100 ms).
  void tick();
  void stopAll();

  // Transitions so far, by reason of the state entered ("excluded:probe_failures", "healthy").
  const std::map<std::string, int64_t>& transitions() const { return transitions_; }
  const HealthSettings& settings() const { return settings_; }
  int64_t probesTotal() const { return probes_; }
  // Routine probes not sent: the replica was proven healthy by traffic, or over the budget.
  int64_t probesSkippedForTrafficTotal() const { return skipped_traffic_; }
  int64_t probesDeferredByBudgetTotal() const { return deferred_budget_; }

 private:
  struct Tracked;
  void apply(Tracked& tracked, const Transition& t);
  void startProbing(const std::shared_ptr<Tracked>& tracked);
  void detectLoadOutliers(const fleet::ModelEntry& model, TimeNs now);
  void detectSlowReplicas(const fleet::ModelEntry& model, TimeNs now);

  boost::asio::io_context& io_;
  const Clock& clock_;
  HealthSettings settings_;
  std::shared_ptr<const fleet::FleetSnapshot> snapshot_;
  std::map<const fleet::ReplicaState*, std::shared_ptr<Tracked>> tracked_;
  std::map<std::string, int64_t> transitions_;
  fleet::ScrapeBudget probe_budget_;  // a token bucket, as the scrape budget
  int64_t probes_ = 0;
  int64_t skipped_traffic_ = 0;
  int64_t deferred_budget_ = 0;
};

}  // namespace switchyard::health
