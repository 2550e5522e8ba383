#include "fleet/fleet_registry.h"

#include <algorithm>
#include <charconv>
#include <cmath>

#include "profile/slo_profiles.h"

namespace switchyard::fleet {

bool splitHttpUrl(std::string_view url, std::string& host, uint16_t& port, std::string* address) {
  constexpr std::string_view kScheme = "http://";
  if (!url.starts_with(kScheme)) return false;
  url.remove_prefix(kScheme.size());
  const std::string_view authority = url.substr(0, url.find('/'));
  if (!splitHostPort(authority, host, port)) return false;
  if (address != nullptr) address->assign(authority);
  return true;
}

bool splitHostPort(std::string_view address, std::string& host, uint16_t& port) {
  const size_t colon = address.rfind(':');
  if (colon == std::string_view::npos || colon == 0 || colon + 1 == address.size()) return false;
  std::string_view port_text = address.substr(colon + 1);
  unsigned value = 0;
  auto [ptr, ec] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), value);
  if (ec != std::errc{} || ptr != port_text.data() + port_text.size() || value > 65535) {
    return false;
  }
  std::string_view host_text = address.substr(0, colon);
  if (host_text.size() > 2 && host_text.front() == '[' && host_text.back() == ']') {
    host_text = host_text.substr(1, host_text.size() - 2);
  }
  host.assign(host_text);
  port = static_cast<uint16_t>(value);
  return true;
}

void FleetRegistry::apply(const std::vector<ModelSpec>& models, TimeNs signal_max_age,
                          const std::string& default_strategy,
                          double auto_blend_load_balance_weight, TimeNs now) {
  // Built without the lock: only this (control) thread writes by_address_ and runtimes_, and the
  // readers of latest() must not wait for a rebuild of thousands of replicas.
  auto snapshot = std::make_shared<FleetSnapshot>();
  snapshot->default_strategy = default_strategy;
  snapshot->auto_blend_load_balance_weight = auto_blend_load_balance_weight;
  snapshot->version = version_.load(std::memory_order_relaxed) + 1;
  snapshot->signal_max_age = signal_max_age;

  std::map<std::string, std::shared_ptr<ReplicaState>> kept;
  std::map<std::string, std::shared_ptr<ModelRuntime>> kept_runtimes;
  for (const ModelSpec& spec : models) {
    ModelEntry model;
    model.name = spec.name;
    model.routing_strategy = spec.routing_strategy;
    model.load_balance = spec.load_balance;
    model.top_k = spec.top_k;
    model.slow_start = spec.slow_start;
    model.candidate_sample = spec.candidate_sample;
    model.admission = spec.admission;
    model.slo = spec.slo;
    model.limits = spec.limits;
    model.timeouts = spec.timeouts;
    auto& runtime = kept_runtimes[spec.name];
    if (auto it = runtimes_.find(spec.name); it != runtimes_.end()) runtime = it->second;
    if (!runtime) runtime = std::make_shared<ModelRuntime>();
    model.runtime = runtime;
    for (const ReplicaSpec& replica_spec : spec.replicas) {
      auto& state = kept[replica_spec.address];
      if (!state) {
        const bool ready = (replica_spec.lifecycle & kNotReady) == 0;
        auto it = by_address_.find(replica_spec.address);
        if (it != by_address_.end() && it->second->upstreamTls() == replica_spec.tls &&
            it->second->authorization() == replica_spec.authorization) {
          state = it->second;
          // Back from NotReady: eased in again like a new replica.
          if ((state->lifecycle() & kNotReady) && ready) state->markReady(now);
        } else {
          std::string host;
          uint16_t port = 0;
          splitHostPort(replica_spec.address, host, port);
          state = std::make_shared<ReplicaState>(replica_spec.address, host, port);
          state->setUpstreamAccess(replica_spec.tls, replica_spec.authorization);
          if (snapshot_ && !replica_spec.established) state->markReady(now);
        }
        state->storeLifecycle(kDiscoveryFlags, replica_spec.lifecycle);
      }
      model.replicas.push_back(ReplicaEntry{state, replica_spec.labels, {}, replica_spec.pod});
    }
    snapshot->models.push_back(std::move(model));
  }
  // Views into labels are taken only now that the vectors stopped moving.
  for (size_t i = 0; i < snapshot->models.size(); ++i) {
    ModelEntry& model = snapshot->models[i];
    snapshot->model_index.emplace(model.name, i);
    for (ReplicaEntry& replica : model.replicas) {
      auto it = replica.labels.find("gpu");
      replica.gpu = it == replica.labels.end() ? std::string_view("unknown") : it->second;
      if (model.slo) model.replica_profiles.push_back(model.slo->forGpu(replica.gpu));
    }
    model.indexStates();
  }
  for (const ModelEntry& model : snapshot->models) {
    rescaleRateLimit(model, -1);
    refreshLearnedMeans(model);
  }
  std::shared_ptr<const FleetSnapshot> previous;
  std::map<std::string, std::shared_ptr<ReplicaState>> left;
  {
    std::lock_guard lock(mutex_);
    left.swap(by_address_);
    by_address_ = std::move(kept);
    runtimes_ = std::move(kept_runtimes);
    previous = std::move(snapshot_);
    snapshot_ = std::move(snapshot);
    version_.store(snapshot_->version, std::memory_order_release);
  }
  // The previous snapshot dies here, on the control thread, once no worker holds it any more:
  // freeing thousands of entries is not work for the request path.
  if (previous) retired_.push_back(std::move(previous));
  collectRetired();
}

void FleetRegistry::collectRetired() {
  std::erase_if(retired_, [](const std::shared_ptr<const FleetSnapshot>& s) {
    return s.use_count() == 1;
  });
}

void rescaleRateLimit(const ModelEntry& model, int routable) {
  if (routable < 0) {
    // Until the health manager has judged the new fleet, every replica counts as routable.
    routable = static_cast<int>(model.replicas.size());
    model.runtime->routable_replicas.store(routable, std::memory_order_relaxed);
  }
  const double per_replica = model.limits.requests_per_second_per_replica;
  // At least one replica's worth: when health has excluded everything the gateway falls back to
  // all replicas, and the rate limit follows that fallback rather than closing the model.
  // With several gateways each enforces its share locally (shared state decides the global
  // rate while it answers; this share is the fallback when it does not).
  const int gateways = std::max(1, model.runtime->live_gateways.load(std::memory_order_relaxed));
  const double rate = per_replica * std::max(1, routable) / gateways;
  if (per_replica <= 0) {
    model.runtime->rate.configure(0, 0);
  } else if (std::abs(model.runtime->rate.rate() - rate) > 1e-9 * rate) {
    model.runtime->rate.configure(rate, std::max(1.0, rate));  // bursts of one second's worth
  }
}

void refreshLearnedMeans(const ModelEntry& model) {
  double decode = 0, prefill = 0, slowdown = 0;
  int decode_n = 0, prefill_n = 0, slowdown_n = 0;
  for (const ReplicaEntry& replica : model.replicas) {
    const LearnedCapacity learned = replica.state->capacity();
    if (std::isfinite(learned.decode) && learned.decode > 0) {
      decode += learned.decode;
      ++decode_n;
    }
    if (std::isfinite(learned.prefill) && learned.prefill > 0) {
      prefill += learned.prefill;
      ++prefill_n;
    }
    if (learned.slowdown >= 0) {  // 0 (flat) is known; NaN is not
      slowdown += learned.slowdown;
      ++slowdown_n;
    }
  }
  LearnedMeans means;
  if (decode_n) means.decode = decode / decode_n;
  if (prefill_n) means.prefill = prefill / prefill_n;
  if (slowdown_n) means.slowdown = slowdown / slowdown_n;
  model.runtime->storeLearnedMeans(means);
}

void refreshCompletionRate(const ModelEntry& model, TimeNs now) {
  constexpr double kTimeConstantS = 5;
  int64_t completions = 0;
  for (const ReplicaEntry& replica : model.replicas) {
    completions += replica.state->counters().outcome_successes_total.load(
        std::memory_order_relaxed);
  }
  ModelRuntime& runtime = *model.runtime;
  const double dt = static_cast<double>(now - runtime.completions_seen_at) / 1e9;
  if (runtime.completions_seen >= 0 && completions >= runtime.completions_seen && dt > 0) {
    const double rate = static_cast<double>(completions - runtime.completions_seen) / dt;
    const double previous = runtime.completion_rate.load(std::memory_order_relaxed);
    const double weight = 1 - std::exp(-dt / kTimeConstantS);
    runtime.completion_rate.store(previous + weight * (rate - previous),
                                  std::memory_order_relaxed);
  }
  runtime.completions_seen = completions;  // a fleet change that lowers the sum restarts it
  runtime.completions_seen_at = now;
}

std::shared_ptr<const FleetSnapshot> FleetRegistry::latest() const {
  std::lock_guard lock(mutex_);
  return snapshot_;
}

std::vector<std::shared_ptr<ReplicaState>> FleetRegistry::replicas() const {
  std::lock_guard lock(mutex_);
  std::vector<std::shared_ptr<ReplicaState>> out;
  out.reserve(by_address_.size());
  for (const auto& [address, state] : by_address_) out.push_back(state);
  return out;
}

}  // namespace switchyard::fleet
