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

// Telemetry as the gateway's scraper and TelemetryShare do it (docs/operations.md, "Telemetry
// at scale"): each replica on its own adaptive period (fleet/scrape_schedule.h) within this
// gateway's budget; with shared state, each replica scraped by one gateway, its rendezvous owner
// among the live ones, which shares what it read; the others store it at their next tick, as a
// sharing round would (live: within two rounds of a quarter interval each). The tick comes at
// the shortest period, a hot replica's, so the periods fall on it.
void Simulator::scrapeTick(SimGateway& g) {
  readSharedScrapes(g);
  const bool sharded = telemetrySharded();
  const bool share = sharded && owner_set_.size() > 1 && !shared_.down();
  if (g.scrape_slots.size() < replicas_.size()) g.scrape_slots.resize(replicas_.size());
  const size_t n = g.replica_at.size();
  size_t p = g.scrape_resume < n ? g.scrape_resume : 0;
  std::vector<size_t>& due = g.scrape_due;
  due.clear();
  for (size_t visited = 0; visited < n; ++visited, p = p + 1 == n ? 0 : p + 1) {
    const uint32_t replica = g.replica_at[p];
    if (sharded && scrape_owner_[replica] != g.index) continue;
    if (g.scrape_slots[replica].due > now_) continue;
    if (!g.scrape_budget.take(now_)) {  // the rest wait for tokens, this one first
      g.scrape_resume = p;
      break;
    }
    due.push_back(p);
  }
  // Each scraped replica's engine model and this gateway's state of it are out of cache (at
  // 10,000 replicas, in DRAM): their lines are fetched a few scrapes ahead, the replica's record
  // (which points at its model) further ahead still.
  constexpr size_t kAhead = 8;
  for (size_t i = 0; i < due.size(); ++i) {
    if (i + 2 * kAhead < due.size()) {
      __builtin_prefetch(&replicas_[g.replica_at[due[i + 2 * kAhead]]]);
    }
    if (i + kAhead < due.size()) {
      const size_t ahead = due[i + kAhead];
      replicas_[g.replica_at[ahead]].model->prefetchForScrape();
      g.fleet_states[ahead]->prefetchSignals();
    }
    scrapeReplica(g, due[i], share);
  }
}

void Simulator::scrapeReplica(SimGateway& g, size_t position, bool share) {
  // A scrape reads the engine's gauges as they are now; a replica that does not answer makes
  // its signals unknown at once (fleet/telemetry_scraper.h).
  const uint32_t replica = g.replica_at[position];
  SimReplica& r = replicas_[replica];
  fleet::ReplicaState& state = *g.fleet_states[position];
  ScrapeSlot& slot = g.scrape_slots[replica];
  ++result_.scrapes;
  fleet::EngineSignals signals;
  if (r.alive) {
    catchUp(r);
    signals = engineSignalsOf(r.model->gauges());
    state.storeSignals(signals, now_);
  } else {
    state.markScrapeFailed(now_);
  }
  const GatewaySpec& gs = scenario_.gateways;
  slot.history.record(r.alive, signals, gs.scrape_policy);
  slot.due = now_ + fleet::scrapePeriod(gs.scrape_policy, gs.scrape_interval, slot.history);
  if (share) shared_scrapes_.push_back({replica, g.index, r.alive, now_, signals});
}

void Simulator::readSharedScrapes(SimGateway& g) {
  const size_t end = shared_scrapes_base_ + shared_scrapes_.size();
  if (shared_.down()) {  // the round fails: what was shared meanwhile is never read
    g.share_cursor = end;
    return;
  }
  constexpr size_t kAhead = 8;  // records whose replica's state is fetched ahead (cold)
  for (size_t i = std::max(g.share_cursor, shared_scrapes_base_); i < end; ++i) {
    if (i + kAhead < end) {
      const uint32_t ahead = shared_scrapes_[i + kAhead - shared_scrapes_base_].replica;
      if (ahead < g.states.size() && g.states[ahead]) g.states[ahead]->prefetchSignals();
    }
    const SharedScrape& record = shared_scrapes_[i - shared_scrapes_base_];
    if (record.from == g.index || record.replica >= g.position.size() ||
        g.position[record.replica] < 0) {
      continue;
    }
    fleet::ReplicaState& state = *g.states[record.replica];
    if (record.read_at <= state.signalsReadAt()) continue;  // this gateway knows better
    if (record.ok) {
      state.storeSignals(record.signals, record.read_at);
    } else if (record.read_at > state.lastScrapeFailureAt()) {
      state.markScrapeFailed(record.read_at);
    }
  }
  g.share_cursor = end;
  // Records every live gateway has read go (the stream's trimming).
  size_t oldest = end;
  for (const SimGateway& h : gateways_) {
    if (h.alive) oldest = std::min(oldest, h.share_cursor);
  }
  const size_t done = oldest - shared_scrapes_base_;
  if (done > 4096 && done * 2 > shared_scrapes_.size()) {
    shared_scrapes_.erase(shared_scrapes_.begin(),
                          shared_scrapes_.begin() + static_cast<std::ptrdiff_t>(done));
    shared_scrapes_base_ = oldest;
  }
}

bool Simulator::telemetrySharded() {
  const GatewaySpec& gs = scenario_.gateways;
  if (!distributed() || !gs.telemetry_sharing) return false;
  // Rounds failing for two intervals clear the shard: each scrapes all it routes to.
  if (shared_.down() && now_ - shared_down_at_ >= 2 * gs.scrape_interval) return false;
  refreshScrapeOwners();
  return true;
}

void Simulator::refreshScrapeOwners() {
  // A gateway's replicas move when its telemetry heartbeat expires: ten scrape intervals, at
  // least 1 s, at most the liveness period (gateway/telemetry_share.h).
  const GatewaySpec& gs = scenario_.gateways;
  const TimeNs heartbeat = std::min(gs.liveness_ttl, std::max(kNsPerSec, 10 * gs.scrape_interval));
  owner_set_now_.clear();
  for (const SimGateway& h : gateways_) {
    if (h.alive || now_ - h.died_at < heartbeat) owner_set_now_.push_back(h.index);
  }
  if (owner_set_now_ == owner_set_ && scrape_owner_.size() == replicas_.size()) return;
  owner_set_ = owner_set_now_;
  gateway_hashes_.clear();
  for (const int h : owner_set_) {
    gateway_hashes_.push_back(fleet::stableHash("gateway-" + std::to_string(h)));
  }
  scrape_owner_.resize(replicas_.size());
  for (size_t i = 0; i < replicas_.size(); ++i) {
    const int owner = fleet::rendezvousOwner(fleet::stableHash(replicas_[i].name), gateway_hashes_);
    scrape_owner_[i] = owner < 0 ? -1 : owner_set_[static_cast<size_t>(owner)];
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
