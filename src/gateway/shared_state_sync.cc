#include "gateway/shared_state_sync.h"

#include <spdlog/spdlog.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>

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
  std::vector<std::pair<const fleet::ModelEntry*, const fleet::ReplicaEntry*>> owners;
  const auto reports = buildReports(*snapshot, SteadyClock::instance().now(), owners);
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
    const fleet::FleetSnapshot& snapshot, TimeNs now,
    std::vector<std::pair<const fleet::ModelEntry*, const fleet::ReplicaEntry*>>& owners) {
  // The first cycle, and the first after the backend connection came back, rewrite every
  // request-path count: the backend may have lost them (or never had this gateway's).
  const int64_t reconnects = sync_->stats().reconnects.load(std::memory_order_relaxed);
  const bool reconcile_all = reconnects != reconnects_seen_;
  reconnects_seen_ = reconnects;
  std::map<const fleet::ReplicaState*, CountWatch> kept;
  std::vector<state::ReplicaReport> reports;
  for (const fleet::ModelEntry& model : snapshot.models) {
    // Models whose limits are admitted in shared state count requests on the request path
    // (admit/release); publishing the local count on top would double it.
    const bool counted_on_path = model.limits.max_inflight_per_replica > 0 ||
                                 model.limits.requests_per_second_per_replica > 0;
    for (const fleet::ReplicaEntry& entry : model.replicas) {
      const fleet::ReplicaCounters& c = entry.state->counters();
      state::ReplicaReport r;
      r.model = model.name;
      r.replica = entry.state->name();
      r.running = c.running.load(std::memory_order_relaxed);
      r.publish_running = !counted_on_path;
      if (counted_on_path) {
        r.reconcile_running = shouldReconcile(*entry.state, reconcile_all, now);
        kept.insert(watches_.extract(entry.state.get()));
      }
      r.output_tokens = c.output_tokens_total.load(std::memory_order_relaxed);
      r.prefill_tokens = c.prefill_tokens_total.load(std::memory_order_relaxed);
      r.prefill_ns = c.prefill_ns_total.load(std::memory_order_relaxed);
      r.tokenless_requests = c.tokenless_requests_total.load(std::memory_order_relaxed);
      r.tokenless_latency_ns = c.tokenless_latency_ns_total.load(std::memory_order_relaxed);
      r.token_time_ns = c.token_time_ns_total.load(std::memory_order_relaxed);
      r.timed_tokens = c.timed_tokens_total.load(std::memory_order_relaxed);
      r.token_concurrency = c.token_concurrency_total.load(std::memory_order_relaxed);
      reports.push_back(std::move(r));
      owners.emplace_back(&model, &entry);
    }
  }
  watches_ = std::move(kept);  // replicas that left the fleet are forgotten
  return reports;
}

asio::awaitable<void> GatewayStateSync::cycle() {
  const auto snapshot = registry_.latest();
  if (!snapshot) co_return;
  std::vector<std::pair<const fleet::ModelEntry*, const fleet::ReplicaEntry*>> owners;
  const std::vector<state::ReplicaReport> reports =
      buildReports(*snapshot, SteadyClock::instance().now(), owners);
  ++syncs_;
  const bool published = co_await sync_->publish(reports, config_.liveness_ttl);
  std::optional<std::vector<state::ReplicaGlobalView>> views;
  if (published) views = co_await sync_->read(reports);
  const TimeNs now = SteadyClock::instance().now();
  if (!views || views->size() != reports.size()) {
    ++sync_failures_;
    // Rewrite every count once the backend answers again, whatever broke this time.
    reconnects_seen_ = -1;
    if (now - last_success_ > config_.liveness_ttl) forgetRemote();
    co_return;
  }
  if (now - last_success_ > config_.liveness_ttl && syncs_ > 1) {
    spdlog::info("shared state sync: answering again after {} ms",
                 (now - last_success_) / kNsPerMs);
  }
  last_success_ = now;
  for (size_t i = 0; i < reports.size(); ++i) {
    if (reports[i].reconcile_running) {
      owners[i].second->state->counters().shared_count_epoch.fetch_add(1,
                                                                      std::memory_order_relaxed);
    }
  }
  if (!synced_once_) {
    synced_once_ = true;
    spdlog::info("shared state: first sync done");
  }
  std::map<const fleet::ReplicaState*, fleet::CapacityCounters> global;
  std::map<std::string, int, std::less<>> live;
  std::map<std::string, int, std::less<>> rank;
  for (size_t i = 0; i < views->size(); ++i) {
    const state::ReplicaGlobalView& v = (*views)[i];
    const auto [model, entry] = owners[i];
    entry->state->storeRemoteRunning(std::max<int64_t>(0, v.others_running));
    fleet::CapacityCounters counters;
    counters.output_tokens = v.output_tokens;
    counters.prefill_tokens = v.prefill_tokens;
    counters.prefill_ns = v.prefill_ns;
    counters.tokenless_requests = v.tokenless_requests;
    counters.tokenless_latency_ns = v.tokenless_latency_ns;
    counters.token_time_ns = v.token_time_ns;
    counters.timed_tokens = v.timed_tokens;
    counters.token_concurrency = v.token_concurrency;
    global[entry->state.get()] = counters;
    live[model->name] = std::max(1, v.live_gateways);
    rank[model->name] = std::max(0, v.gateway_rank);
  }
  for (const fleet::ModelEntry& model : snapshot->models) {
    const auto it = live.find(model.name);
    if (it == live.end()) continue;
    model.runtime->gateway_rank.store(rank[model.name], std::memory_order_relaxed);
    if (model.runtime->live_gateways.exchange(it->second, std::memory_order_relaxed) !=
        it->second) {
      spdlog::info("shared state: model {} is served by {} live gateways", model.name,
                   it->second);
      fleet::rescaleRateLimit(model,
                              model.runtime->routable_replicas.load(std::memory_order_relaxed));
    }
  }
  global_ = std::move(global);
  live_ = std::move(live);
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
