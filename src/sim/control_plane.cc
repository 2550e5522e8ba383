// Each simulated gateway's control plane, as the live gateway's control thread runs it
// (src/gateway/gateway.cc and shared_state_sync.cc): the telemetry scrape of every replica, the
// capacity refresh (from the token counters of every gateway when the state is shared), the
// health evaluation and its probes, and the shared-state sync that gives each gateway the
// others' in-flight counts after a delay.
#include <algorithm>

#include "fleet/fleet_registry.h"
#include "sim/engine_telemetry.h"
#include "sim/simulator_impl.h"

namespace switchyard::sim {

void Simulator::scrape(SimGateway& g) {
  // A scrape reads the engine's gauges as they are now; a replica that does not answer makes
  // its signals unknown at once (fleet/telemetry_scraper.h).
  for (size_t p = 0; p < g.replica_at.size(); ++p) {
    SimReplica& r = replicas_[g.replica_at[p]];
    fleet::ReplicaState& state = *g.fleet_states[p];
    if (r.alive) {
      catchUp(r);
      state.storeSignals(engineSignalsOf(r.model->gauges()), now_);
    } else {
      state.markScrapeFailed(now_);
    }
  }
}

void Simulator::refreshCapacity(SimGateway& g) {
  // As ControlPlane::refreshCapacity: with shared state, each replica's counters summed over
  // every gateway (the last view read); a replica the view does not cover uses this gateway's.
  if (!distributed() || !g.have_global) {
    g.capacity->refresh(g.fleet_states, now_);
  } else {
    std::vector<fleet::CapacityCounters> counters;
    counters.reserve(g.fleet_states.size());
    for (size_t p = 0; p < g.fleet_states.size(); ++p) {
      const uint32_t replica = g.replica_at[p];
      counters.push_back(replica < g.global.size()
                             ? g.global[replica]
                             : fleet::CapacityCounters::of(g.fleet_states[p]->counters()));
    }
    g.capacity->refresh(g.fleet_states, counters, now_);
  }
  fleet::refreshLearnedMeans(*g.model);
  fleet::refreshCompletionRate(*g.model, now_);  // a queued request's predicted wait
}

void Simulator::probe(SimGateway& g, const fleet::ReplicaState& state) {
  // The health path answers while the replica is up (a slow replica still answers it).
  const auto it = g.replica_of.find(&state);
  if (it != g.replica_of.end()) g.health->onProbe(state, replicas_[it->second].alive, now_);
}

void Simulator::probeAll(SimGateway& g) {
  for (size_t p = 0; p < g.fleet_states.size(); ++p) {
    g.health->onProbe(*g.fleet_states[p], replicas_[g.replica_at[p]].alive, now_);
  }
}

void Simulator::healthTick(SimGateway& g) {
  urgent_.clear();
  g.health->tick(now_, [this](const fleet::ReplicaState& state) { urgent_.push_back(&state); });
  // A confirming or half-open probe goes out at once rather than at the next interval.
  for (const fleet::ReplicaState* state : urgent_) probe(g, *state);
}

void Simulator::sync(SimGateway& g) {
  if (shared_.down()) {
    ++result_.shared_state_degraded;
    // Other gateways' counts are not trusted longer than their heartbeats are.
    if (now_ - g.last_sync_success > scenario_.gateways.liveness_ttl) forgetRemote(g);
    return;
  }
  // Publish this gateway's counts (its heartbeat), then read the others'; the view reaches the
  // gateway after the round trip.
  g.report.assign(replicas_.size(), ReplicaReport{});
  for (size_t i = 0; i < replicas_.size() && i < g.states.size(); ++i) {
    if (!g.states[i]) continue;
    const fleet::ReplicaCounters& c = g.states[i]->counters();
    g.report[i].running = c.running.load(std::memory_order_relaxed);
    g.report[i].counters = fleet::CapacityCounters::of(c);
  }
  if (leasesSlots() && now_ - g.slots_swept_at >= kNsPerSec) sweepSlots(g);
  shared_.publish(g.index, g.report, now_);
  // Request-by-request admissions count on the request path; with leased slots the counts are
  // published like any other (GatewayStateSync::buildReports).
  shared_.read(g.index, now_, sharedLimits() && !leasesSlots(),
               views_[static_cast<size_t>(g.index)]);
  g.last_sync_success = now_;
  queue_.push(now_ + scenario_.gateways.sync_delay, kSyncApply, static_cast<uint32_t>(g.index));
}

void Simulator::sweepSlots(SimGateway& g) {
  // As the gateway worker's one-second sweep: leases untouched since the previous one go back.
  g.slots_swept_at = now_;
  g.slots.sweep([&](std::string_view, std::string_view replica, int64_t held) {
    const auto it = replica_by_name_.find(std::string(replica));
    if (it != replica_by_name_.end()) shared_.changeSlots(g.index, it->second, -held);
  });
}

void Simulator::applyView(SimGateway& g, SyncView& view) {
  for (size_t i = 0; i < view.others_running.size() && i < g.states.size(); ++i) {
    if (g.states[i]) g.states[i]->storeRemoteRunning(std::max<int64_t>(0, view.others_running[i]));
  }
  g.global = std::move(view.global);
  g.have_global = true;
  const fleet::ModelEntry& model = *g.model;
  model.runtime->gateway_rank.store(view.gateway_rank, std::memory_order_relaxed);
  if (model.runtime->live_gateways.exchange(view.live_gateways, std::memory_order_relaxed) !=
      view.live_gateways) {
    fleet::rescaleRateLimit(model,
                            model.runtime->routable_replicas.load(std::memory_order_relaxed));
  }
}

void Simulator::forgetRemote(SimGateway& g) {
  if (!g.have_global) return;
  for (const auto& state : g.states) {
    if (state) state->storeRemoteRunning(0);
  }
  g.global.clear();
  g.have_global = false;
}

}  // namespace switchyard::sim
