// FleetRegistry: owns the set of known replicas and publishes FleetSnapshots.
//
// apply() is called on the control thread with the desired fleet (from static config now, from
// Kubernetes discovery later); it reuses the ReplicaState of every replica that stays, so live
// counters survive reloads, and swaps in a new snapshot. The snapshot is built outside the lock
// (readers never wait for a rebuild) and a replaced one is freed on the control thread
// (collectRetired), never by the worker that happens to drop it last. Workers call current() on
// every request: it is one relaxed atomic load in the steady state, and takes a short mutex only
// in the rare request that first sees a new version (RCU-style, per worker cache).
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "fleet/fleet_snapshot.h"

namespace switchyard::fleet {

struct ReplicaSpec {
  std::string address;  // host:port
  std::map<std::string, std::string> labels;
  // Discovery's view (LifecycleFlag bits among kDiscoveryFlags); 0 for static replicas.
  uint8_t lifecycle = 0;
  // A replica discovered in the first listing was serving before this gateway started: it is
  // established, not eased in by slow start.
  bool established = false;
  PodIdentity pod;  // empty for static replicas
  bool tls = false;            // the replica speaks HTTPS (given as https://host:port)
  std::string authorization;   // sent upstream as Authorization ("Bearer KEY"); "" none
};

struct ModelSpec {
  std::string name;
  std::string routing_strategy;
  LoadBalanceParams load_balance;
  TopKParams top_k;
  SlowStartParams slow_start;
  uint32_t candidate_sample = 0;
  ModelLimits limits;
  AdmissionParams admission;
  UpstreamTimeouts timeouts;
  std::vector<ReplicaSpec> replicas;
  std::shared_ptr<const profile::SloProfiles> slo;  // `slo:` (SLO routing); null without
};

class FleetRegistry {
 public:
  FleetRegistry() = default;

  // Control thread. Builds and publishes a snapshot for `models`. Addresses must already be
  // validated (host:port). A replica that joins an already published fleet is marked ready at
  // `now` (slow start eases it in); the replicas of the first fleet, and those a spec calls
  // established, are not: they were serving before this gateway started, so ramping them would
  // only skew the start. A replica whose spec stops saying kNotReady is marked ready at `now`
  // too. Each spec's discovery lifecycle bits are stored into its ReplicaState (the operator's
  // drain bit is left alone).
  void apply(const std::vector<ModelSpec>& models, TimeNs signal_max_age,
             const std::string& default_strategy, double auto_blend_load_balance_weight = 1.0,
             TimeNs now = 0);

  // Any thread. The latest snapshot.
  std::shared_ptr<const FleetSnapshot> latest() const;
  uint64_t version() const { return version_.load(std::memory_order_acquire); }

  // Every distinct replica of the latest snapshot (for the scraper and admin views).
  std::vector<std::shared_ptr<ReplicaState>> replicas() const;

  // Control thread, now and then: frees replaced snapshots that no worker holds any more. A
  // worker that drops the last reference to an old snapshot would otherwise free it on the
  // request path; the registry keeps each one until then.
  void collectRetired();
  size_t retiredCount() const { return retired_.size(); }

 private:
  mutable std::mutex mutex_;  // guards snapshot_, by_address_, runtimes_; never held on I/O
  std::shared_ptr<const FleetSnapshot> snapshot_;
  std::map<std::string, std::shared_ptr<ReplicaState>> by_address_;
  std::map<std::string, std::shared_ptr<ModelRuntime>> runtimes_;
  std::atomic<uint64_t> version_{0};
  std::vector<std::shared_ptr<const FleetSnapshot>> retired_;  // control thread only
};

// A worker's cached view: refreshes from the registry only when its version moved.
class SnapshotCache {
 public:
  explicit SnapshotCache(const FleetRegistry& registry) : registry_(registry) {}
  const std::shared_ptr<const FleetSnapshot>& get() {
    const uint64_t v = registry_.version();
    if (!snapshot_ || v != version_) {
      snapshot_ = registry_.latest();
      version_ = snapshot_ ? snapshot_->version : 0;
    }
    return snapshot_;
  }

 private:
  const FleetRegistry& registry_;
  std::shared_ptr<const FleetSnapshot> snapshot_;
  uint64_t version_ = 0;
};

// Sets a model's rate limit to its per-replica RPS x `routable` replicas (-1: all of them).
void rescaleRateLimit(const ModelEntry& model, int routable);

// Recomputes the model's LearnedMeans from its replicas' learned capacities (control thread:
// after every capacity refresh and fleet change).
void refreshLearnedMeans(const ModelEntry& model);

// Updates the model's completion rate (requests/s completed by its replicas through this gateway,
// an EWMA with a 5 s time constant) from the replicas' outcome counters (control thread, every
// capacity refresh).
void refreshCompletionRate(const ModelEntry& model, TimeNs now);

// Splits "host:port"; false when malformed or the port is out of range.
bool splitHostPort(std::string_view address, std::string& host, uint16_t& port);
// Splits "http://host:port[/path]" into host and port (and the "host:port" it named, when
// `address` is given); false when it is not that.
bool splitHttpUrl(std::string_view url, std::string& host, uint16_t& port,
                  std::string* address = nullptr);

}  // namespace switchyard::fleet
