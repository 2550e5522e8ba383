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

void GatewayStateSync::start() {
  if (!sync_->distributed()) return;
  last_success_ = SteadyClock::instance().now();
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
    if (!running_) {
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
    schedule();
  });
}

asio::awaitable<void> GatewayStateSync::cycle() {
  const auto snapshot = registry_.latest();
  if (!snapshot) co_return;
  std::vector<state::ReplicaReport> reports;
  std::vector<std::pair<const fleet::ModelEntry*, const fleet::ReplicaEntry*>> owners;
  for (const fleet::ModelEntry& model : snapshot->models) {
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
  ++syncs_;
  const bool published = co_await sync_->publish(reports, config_.liveness_ttl);
  std::optional<std::vector<state::ReplicaGlobalView>> views;
  if (published) views = co_await sync_->read(reports);
  const TimeNs now = SteadyClock::instance().now();
  if (!views || views->size() != reports.size()) {
    ++sync_failures_;
    if (now - last_success_ > config_.liveness_ttl) forgetRemote();
    co_return;
  }
  if (now - last_success_ > config_.liveness_ttl && syncs_ > 1) {
    spdlog::info("shared state sync: answering again after {} ms",
                 (now - last_success_) / kNsPerMs);
  }
  last_success_ = now;
  std::map<const fleet::ReplicaState*, fleet::CapacityCounters> global;
  std::map<std::string, int, std::less<>> live;
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
  }
  for (const fleet::ModelEntry& model : snapshot->models) {
    const auto it = live.find(model.name);
    if (it == live.end()) continue;
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
