// GatewayStateSync: the control plane's side of shared state. Every sync interval it publishes
// this gateway's heartbeat and per-replica counts, then reads every live gateway's, in the
// background (never on the request path):
//  - each replica's in-flight count on the *other* live gateways goes into
//    ReplicaState::storeRemoteRunning, so routing and the in-flight filter see global load;
//  - each model's live gateway count rescales this gateway's local share of the model-wide
//    rate limit (the fallback while shared state does not answer);
//  - the output-token counters summed over all gateways feed capacity learning, so each gateway
//    learns from a replica's whole traffic, not its own 1/N slice.
// When the backend does not answer, the last view is kept for one liveness period and then
// dropped (other gateways' counts are not trusted longer than their heartbeats are).
// The first cycle runs at start(), not one interval later, and the gateway reports ready only
// once it has synced (or has given up and says it runs degraded: docs/operations.md).
// Where the request path keeps the shared in-flight count (admit/release), the sync overwrites
// it with this gateway's own count when the shared one may be wrong: on the first sync, after
// its connection to the backend was re-established (a restarted Redis has lost every count),
// and now and then for a replica whose count has not moved for a while (a release lost with a
// connection). With the memory backend (one gateway) it does nothing.
// At scale (docs/shared-state.md, "Deltas"): a cycle publishes only the replicas whose counts
// changed since the last publish that went through (plus one heartbeat per model), and reads
// only the replicas whose counts changed anywhere since its last read (readChanges). Every
// kFullPublishEvery it publishes every replica (unchanged ones only to keep their keys alive, not
// as changes), and after a reconnect (shared state may have been reset) it publishes and reads
// in full. A failed cycle costs nothing extra: what it did not write or read goes next time.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <array>
#include <map>
#include <unordered_map>
#include <memory>
#include <optional>
#include <vector>

#include "fleet/capacity_estimator.h"
#include "fleet/fleet_registry.h"
#include "gateway/shared_state_config.h"
#include "state/shared_state.h"

namespace switchyard::gateway {

class GatewayStateSync {
 public:
  GatewayStateSync(boost::asio::io_context& io, state::SharedStateBackend& backend,
                   const fleet::FleetRegistry& registry, SharedStateConfig config);
  void start();
  void stop();
  // Shutdown, after the requests in flight finished: this gateway's heartbeat and counts are
  // removed, so the others stop counting them at once rather than one liveness period later.
  boost::asio::awaitable<void> retire();

  // True once a publish and read went through (always true when not distributed).
  bool syncedOnce() const { return !sync_->distributed() || synced_once_; }

  // Capacity-learning counters of `replica` summed over every gateway, from the last read;
  // nullopt when not distributed or not read yet.
  std::optional<fleet::CapacityCounters> globalCounters(const fleet::ReplicaState* replica) const;

  const state::SharedStateStats& stats() const { return sync_->stats(); }
  int64_t syncsTotal() const { return syncs_; }
  int64_t syncFailuresTotal() const { return sync_failures_; }
  // Replica reports written and replica views read so far (what the deltas save shows here).
  int64_t reportsPublishedTotal() const { return reports_published_; }
  int64_t viewsReadTotal() const { return views_read_; }
  // Live gateways per model name, from the last read.
  const std::map<std::string, int, std::less<>>& liveGateways() const { return live_; }
  bool distributed() const { return sync_->distributed(); }

 private:
  // A replica's count as the sync last saw it, to tell when it has stopped moving.
  struct CountWatch {
    int64_t requests_total = -1;
    int64_t running = -1;
    TimeNs unchanged_since = 0;
    TimeNs reconciled_at = -1;
  };

  // What the last publish that went through wrote for a replica.
  struct Published {
    int64_t running = 0;
    std::array<int64_t, 8> tokens{};
    bool operator==(const Published&) const = default;
  };
  // A model's replicas by name, for applying changes (rebuilt when the snapshot changes).
  struct ModelIndex {
    const fleet::ModelEntry* model = nullptr;
    std::unordered_map<std::string_view, const fleet::ReplicaEntry*> replicas;
  };

  boost::asio::awaitable<void> cycle();
  void indexSnapshot(const fleet::FleetSnapshot& snapshot);
  void storeGlobal(const fleet::ReplicaEntry& entry, const state::ReplicaGlobalView& v);
  void schedule();
  void spawnCycle();
  void forgetRemote();
  // Every replica's report when `full`, else the changed ones and one heartbeat per model.
  std::vector<state::ReplicaReport> buildReports(const fleet::FleetSnapshot& snapshot, TimeNs now,
                                                 bool full);
  bool shouldReconcile(const fleet::ReplicaState& replica, bool all, TimeNs now);

  boost::asio::io_context& io_;
  const fleet::FleetRegistry& registry_;
  SharedStateConfig config_;
  std::unique_ptr<state::SharedStateSync> sync_;
  boost::asio::steady_timer timer_;
  bool running_ = false;
  bool stopped_ = false;
  TimeNs last_success_ = 0;
  int64_t syncs_ = 0;
  int64_t sync_failures_ = 0;
  int64_t reports_published_ = 0;
  int64_t views_read_ = 0;
  std::map<const fleet::ReplicaState*, fleet::CapacityCounters> global_;
  std::map<std::string, int, std::less<>> live_;
  bool synced_once_ = false;
  int64_t reconnects_seen_ = -1;  // the backend's reconnect count at the last cycle
  std::map<const fleet::ReplicaState*, CountWatch> watches_;
  std::unordered_map<const fleet::ReplicaState*, Published> published_;
  std::unordered_map<const fleet::ReplicaState*, Published> pending_;  // this cycle's writes
  std::vector<fleet::ReplicaState*> rewritten_;  // this cycle's whole running counts
  TimeNs last_full_publish_ = -1;
  int64_t reconnects_full_ = -1;  // the backend's reconnect count at the last full cycle
  std::map<std::string, state::ChangeCursor, std::less<>> cursors_;
  uint64_t indexed_version_ = 0;
  std::map<std::string, ModelIndex, std::less<>> index_;
};

}  // namespace switchyard::gateway
