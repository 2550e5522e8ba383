// HealthManager: the gateway's driver of FleetHealth (health/fleet_health.h) on the control
// thread: it probes each replica's health path over HTTP (every probe interval, and at once when
// FleetHealth asks for a confirming or half-open probe) and runs FleetHealth's periodic
// evaluation, which publishes the verdicts into the ReplicaStates the routing filters read.
// At scale: a healthy replica whose requests succeeded since its last probe round is not probed
// (traffic is the better proof), and routine probes share a per-second budget.
// Not thread-safe: control thread only.
#pragma once

#include <boost/asio/io_context.hpp>
#include <map>
#include <memory>
#include <string>

#include "core/clock.h"
#include "fleet/fleet_snapshot.h"
#include "fleet/scrape_schedule.h"
#include "health/fleet_health.h"

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
  const std::map<std::string, int64_t>& transitions() const { return health_.transitions(); }
  const HealthSettings& settings() const { return health_.settings(); }
  int64_t probesTotal() const { return probes_; }
  // Routine probes not sent: the replica was proven healthy by traffic, or over the budget.
  int64_t probesSkippedForTrafficTotal() const { return skipped_traffic_; }
  int64_t probesDeferredByBudgetTotal() const { return deferred_budget_; }

 private:
  struct Prober;
  void startProbing(const std::shared_ptr<Prober>& prober);

  boost::asio::io_context& io_;
  const Clock& clock_;
  FleetHealth health_;
  std::map<const fleet::ReplicaState*, std::shared_ptr<Prober>> probers_;
  fleet::ScrapeBudget probe_budget_;  // a token bucket, as the scrape budget
  int64_t probes_ = 0;
  int64_t skipped_traffic_ = 0;
  int64_t deferred_budget_ = 0;
};

}  // namespace switchyard::health
