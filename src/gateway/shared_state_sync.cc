#include "gateway/shared_state_sync.h"

#include <spdlog/spdlog.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <algorithm>

namespace switchyard::gateway {

namespace asio = boost::asio;

GatewayStateSync::GatewayStateSync(asio::io_context& io, state::SharedStateBackend& backend,
                                   const fleet::FleetRegistry& registry,
                                   SharedStateConfig config)
    : io_(io),
      registry_(registry),
      config_(std::move(config)),
      sync_(backend.makeSync(io.get_executor())),
      timer_(io) {}

namespace {

// A count that has not moved this long has no admission or release on its way to the backend.
constexpr TimeNs kQuietBeforeReconcile = 1 * kNsPerSec;
// How often a quiet replica's count is rewritten at most.
constexpr TimeNs kReconcileEvery = 5 * kNsPerSec;
// A replica that is never quiet is rewritten this often anyway: a count that drifted (a release
// lost with its connection, an admission racing the rewrite) is corrected within this bound, at
// the price of an error of one for a request admitted or released during the rewrite itself.
constexpr TimeNs kReconcileBusyEvery = 30 * kNsPerSec;
// Every replica's counts are published now and then even when unchanged: that keeps their
// token keys from expiring and repairs whatever a lost write left behind.
constexpr TimeNs kFullPublishEvery = 60 * kNsPerSec;

// What the other gateways are told this one has in flight on a replica: not the requests still
// waiting for a slot lease (ReplicaCounters::awaiting_slot).
int64_t publishedRunning(const fleet::ReplicaCounters& c) {
  const int64_t awaiting = c.awaiting_slot.load(std::memory_order_relaxed);
  return std::max<int64_t>(0, c.running.load(std::memory_order_relaxed) - awaiting);
}

}  // namespace

void GatewayStateSync::start() {
  if (!sync_->distributed()) return;
  last_success_ = SteadyClock::instance().now();
  spawnCycle();  // at once: the gateway is not ready until it has synced
  schedule();
}

void GatewayStateSync::stop() {
  stopped_ = true;
  timer_.cancel();
}

void GatewayStateSync::schedule() {
  if (stopped_) return;
  timer_.expires_after(std::chrono::nanoseconds(config_.sync_interval));
  timer_.async_wait([this](const boost::system::error_code& ec) {
    if (ec || stopped_) return;
    spawnCycle();
    schedule();
  });
}

void GatewayStateSync::spawnCycle() {
  if (running_) return;
  running_ = true;
  asio::co_spawn(io_, cycle(), [this](std::exception_ptr e) {
    running_ = false;
    if (e) {
      try {
        std::rethrow_exception(e);
      } catch (const std::exception& ex) {
        spdlog::error("shared state sync failed: {}", ex.what());
      }
    }
  });
}

asio::awaitable<void> GatewayStateSync::retire() {
  if (!sync_->distributed()) co_return;
  const auto snapshot = registry_.latest();
  if (!snapshot) co_return;
  const auto reports = buildReports(*snapshot, SteadyClock::instance().now(), true);
  if (co_await sync_->retire(reports)) {
    spdlog::info("shared state: this gateway's heartbeat and counts removed");
  }
}

bool GatewayStateSync::shouldReconcile(const fleet::ReplicaState& replica, bool all,
                                       TimeNs now) {
  const fleet::ReplicaCounters& c = replica.counters();
  CountWatch& watch = watches_[&replica];
  const int64_t requests = c.requests_total.load(std::memory_order_relaxed);
  const int64_t running = c.running.load(std::memory_order_relaxed);
  if (requests != watch.requests_total || running != watch.running) {
    watch.requests_total = requests;
    watch.running = running;
    watch.unchanged_since = now;
  }
  const bool quiet = now - watch.unchanged_since >= kQuietBeforeReconcile &&
                     (watch.reconciled_at < 0 || now - watch.reconciled_at >= kReconcileEvery);
  const bool overdue = watch.reconciled_at >= 0 && now - watch.reconciled_at >= kReconcileBusyEvery;
  if (!all && !quiet && !overdue) return false;
  watch.reconciled_at = now;
  return true;
}

std::vector<state::ReplicaReport> GatewayStateSync::buildReports(
    const fleet::FleetSnapshot& snapshot, TimeNs now, bool full) {
  // The first cycle, and the first after the backend connection came back, rewrite every
  // request-path count: the backend may have lost them (or never had this gateway's).
  const int64_t reconnects = sync_->stats().reconnects.load(std::memory_order_relaxed);
  const bool reconcile_all = reconnects != reconnects_seen_;
  reconnects_seen_ = reconnects;
  std::map<const fleet::ReplicaState*, CountWatch> kept;
  std::vector<state::ReplicaReport> reports;
  pending_.clear();
  rewritten_.clear();
  for (const fleet::ModelEntry& model : snapshot.models) {
    // Models whose limits are admitted in shared state request by request count requests on
    // the request path (admit/release); publishing the local count on top would double it.
    // With leased slots the leases hold the limit and the count is published like any other.
    const bool counted_on_path =
        (model.limits.max_inflight_per_replica > 0 ||
         model.limits.requests_per_second_per_replica > 0) &&
        !leasesInflightSlots(config_, model.limits.max_inflight_per_replica,
                             model.limits.requests_per_second_per_replica);
    for (const fleet::ReplicaEntry& entry : model.replicas) {
      const fleet::ReplicaCounters& c = entry.state->counters();
      Published now_values;
      const int64_t running = publishedRunning(c);
      now_values.running = counted_on_path ? 0 : running;
      now_values.tokens = {c.output_tokens_total.load(std::memory_order_relaxed),
                           c.prefill_tokens_total.load(std::memory_order_relaxed),
                           c.prefill_ns_total.load(std::memory_order_relaxed),
                           c.tokenless_requests_total.load(std::memory_order_relaxed),
                           c.tokenless_latency_ns_total.load(std::memory_order_relaxed),
                           c.token_time_ns_total.load(std::memory_order_relaxed),
                           c.timed_tokens_total.load(std::memory_order_relaxed),
                           c.token_concurrency_total.load(std::memory_order_relaxed)};
      bool reconcile = false;
      if (counted_on_path) {
        reconcile = shouldReconcile(*entry.state, reconcile_all, now);
        kept.insert(watches_.extract(entry.state.get()));
      }
      const auto last = published_.find(entry.state.get());
      const bool unchanged = last != published_.end() && last->second == now_values;
      if (!full && !reconcile && unchanged) continue;
      // A replica this gateway never counted anything on has nothing to tell, not even in a full
      // publish: an idle fleet of thousands then costs heartbeats only, and readers of changes
      // never walk it.
      if (!reconcile && now_values == Published{} &&
          (last == published_.end() || last->second == Published{})) {
        continue;
      }
      state::ReplicaReport r;
      r.model = model.name;
      r.replica = entry.state->name();
      r.running = running;
      r.publish_running = !counted_on_path;
      r.reconcile_running = reconcile;
      r.output_tokens = now_values.tokens[0];
      r.prefill_tokens = now_values.tokens[1];
      r.prefill_ns = now_values.tokens[2];
      r.tokenless_requests = now_values.tokens[3];
      r.tokenless_latency_ns = now_values.tokens[4];
      r.token_time_ns = now_values.tokens[5];
      r.timed_tokens = now_values.tokens[6];
      r.token_concurrency = now_values.tokens[7];
      r.refresh_only = unchanged && !reconcile;
      reports.push_back(std::move(r));
      pending_[entry.state.get()] = now_values;
      if (reconcile) rewritten_.push_back(entry.state.get());
    }
    state::ReplicaReport heartbeat;
    heartbeat.model = model.name;
    heartbeat.heartbeat_only = true;
    reports.push_back(std::move(heartbeat));
  }
  watches_ = std::move(kept);  // replicas that left the fleet are forgotten
  return reports;
}

void GatewayStateSync::indexSnapshot(const fleet::FleetSnapshot& snapshot) {
  if (indexed_version_ == snapshot.version && !index_.empty()) return;
  indexed_version_ = snapshot.version;
  index_.clear();
  for (const fleet::ModelEntry& model : snapshot.models) {
    ModelIndex& index = index_[model.name];
    index.model = &model;
    index.replicas.reserve(model.replicas.size());
    for (const fleet::ReplicaEntry& entry : model.replicas) {
      index.replicas.emplace(entry.state->name(), &entry);
    }
  }
  // What belonged to models and replicas that left the fleet is dropped (compared by address
  // only: a replica that left may be gone); new models start with a full read.
  std::erase_if(cursors_, [&](const auto& c) { return index_.count(c.first) == 0; });
  std::erase_if(live_, [&](const auto& l) { return index_.count(l.first) == 0; });
  std::unordered_map<const fleet::ReplicaState*, bool> current;
  for (const fleet::ModelEntry& model : snapshot.models) {
    for (const fleet::ReplicaEntry& entry : model.replicas) current[entry.state.get()] = true;
  }
  std::erase_if(global_, [&](const auto& g) { return current.count(g.first) == 0; });
  std::erase_if(published_, [&](const auto& p) { return current.count(p.first) == 0; });
}

void GatewayStateSync::storeGlobal(const fleet::ReplicaEntry& entry,
                                   const state::ReplicaGlobalView& v) {
  entry.state->storeRemoteRunning(std::max<int64_t>(0, v.others_running));
  fleet::CapacityCounters counters;
  counters.output_tokens = v.output_tokens;
  counters.prefill_tokens = v.prefill_tokens;
  counters.prefill_ns = v.prefill_ns;
  counters.tokenless_requests = v.tokenless_requests;
  counters.tokenless_latency_ns = v.tokenless_latency_ns;
  counters.token_time_ns = v.token_time_ns;
  counters.timed_tokens = v.timed_tokens;
  counters.token_concurrency = v.token_concurrency;
  global_[entry.state.get()] = counters;
}

asio::awaitable<void> GatewayStateSync::cycle() {
  const auto snapshot = registry_.latest();
  if (!snapshot) co_return;
  const TimeNs started = SteadyClock::instance().now();
  // A new connection may be to a Redis that lost everything (restarted): publish and read in
  // full. A failed cycle needs neither: what it did not write is still unpublished (and goes
  // with the next delta), what it did not read is still after the cursor.
  const int64_t reconnects = sync_->stats().reconnects.load(std::memory_order_relaxed);
  const bool reconnected = reconnects != reconnects_full_;
  const bool full = reconnected || last_full_publish_ < 0 ||
                    started - last_full_publish_ >= kFullPublishEvery;
  const std::vector<state::ReplicaReport> reports = buildReports(*snapshot, started, full);
  ++syncs_;
  const bool published = co_await sync_->publish(reports, config_.liveness_ttl);
  if (published) {
    reports_published_ += static_cast<int64_t>(pending_.size());
    for (auto& [state, values] : pending_) published_[state] = values;
    if (full) last_full_publish_ = started;
    pending_.clear();
    // Shared state now counts every request in flight there, those admitted locally included.
    for (fleet::ReplicaState* replica : rewritten_) {
      replica->counters().shared_count_epoch.fetch_add(1, std::memory_order_relaxed);
    }
  }
  rewritten_.clear();
  indexSnapshot(*snapshot);
  std::vector<state::ChangeQuery> queries;
  queries.reserve(index_.size());
  for (const auto& [name, index] : index_) {
    state::ChangeQuery& query = queries.emplace_back();
    query.model = name;
    if (!reconnected) {
      if (const auto it = cursors_.find(name); it != cursors_.end()) query.cursor = it->second;
    }
  }
  std::optional<std::vector<state::ModelChanges>> changes;
  if (published) changes = co_await sync_->readChanges(queries);
  const TimeNs now = SteadyClock::instance().now();
  if (!changes || changes->size() != queries.size()) {
    ++sync_failures_;
    // Rewrite every request-path count once the backend answers again, whatever broke.
    reconnects_seen_ = -1;
    if (now - last_success_ > config_.liveness_ttl) forgetRemote();
    co_return;
  }
  reconnects_full_ = reconnects;
  if (now - last_success_ > config_.liveness_ttl && syncs_ > 1) {
    spdlog::info("shared state sync: answering again after {} ms",
                 (now - last_success_) / kNsPerMs);
  }
  last_success_ = now;
  if (!synced_once_) {
    synced_once_ = true;
    spdlog::info("shared state: first sync done");
  }
  for (state::ModelChanges& answer : *changes) {
    const auto index = index_.find(answer.model);
    if (index == index_.end()) continue;
    const fleet::ModelEntry& model = *index->second.model;
    cursors_[answer.model] = std::move(answer.cursor);
    if (answer.full) {
      // Replicas not listed have no counts anywhere.
      for (const fleet::ReplicaEntry& entry : model.replicas) {
        entry.state->storeRemoteRunning(0);
        global_[entry.state.get()] = fleet::CapacityCounters{};
      }
    }
    for (const state::ReplicaGlobalView& view : answer.replicas) {
      const auto entry = index->second.replicas.find(view.replica);
      if (entry != index->second.replicas.end()) storeGlobal(*entry->second, view);
    }
    views_read_ += static_cast<int64_t>(answer.replicas.size());
    const int live = std::max(1, answer.live_gateways);
    live_[model.name] = live;
    model.runtime->gateway_rank.store(std::max(0, answer.gateway_rank),
                                      std::memory_order_relaxed);
    if (model.runtime->live_gateways.exchange(live, std::memory_order_relaxed) != live) {
      spdlog::info("shared state: model {} is served by {} live gateways", model.name, live);
      fleet::rescaleRateLimit(model,
                              model.runtime->routable_replicas.load(std::memory_order_relaxed));
    }
  }
}

void GatewayStateSync::forgetRemote() {
  if (global_.empty() && live_.empty()) return;
  spdlog::warn("shared state sync: no answer for {} ms; other gateways' counts are dropped",
               config_.liveness_ttl / kNsPerMs);
  const auto snapshot = registry_.latest();
  for (const fleet::ModelEntry& model : snapshot->models) {
    for (const fleet::ReplicaEntry& entry : model.replicas) entry.state->storeRemoteRunning(0);
  }
  global_.clear();
  live_.clear();
}

std::optional<fleet::CapacityCounters> GatewayStateSync::globalCounters(
    const fleet::ReplicaState* replica) const {
  const auto it = global_.find(replica);
  if (it == global_.end()) return std::nullopt;
  return it->second;
}

}  // namespace switchyard::gateway
