#include "health/fleet_health.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <span>
#include <vector>

#include "fleet/batching_curve.h"
#include "fleet/fleet_registry.h"

namespace switchyard::health {

namespace {

// Whether `spec` ("slo-pack-load", "slo:2,slo-least-load:1", ...) names SLO strategies only:
// each part's name (before its weight) is `slo` or starts with `slo-`.
bool onlySloStrategies(std::string_view spec) {
  if (spec.empty()) return false;
  while (!spec.empty()) {
    const size_t comma = spec.find(',');
    std::string_view name = spec.substr(0, comma);
    name = name.substr(0, name.find(':'));
    while (!name.empty() && name.front() == ' ') name.remove_prefix(1);
    while (!name.empty() && name.back() == ' ') name.remove_suffix(1);
    if (name != "slo" && name.substr(0, 4) != "slo-") return false;
    spec = comma == std::string_view::npos ? std::string_view{} : spec.substr(comma + 1);
  }
  return true;
}

}  // namespace

using fleet::HealthState;

void FleetHealth::sync(
    std::shared_ptr<const fleet::FleetSnapshot> snapshot,
    const std::function<void(const std::shared_ptr<fleet::ReplicaState>&)>& added) {
  snapshot_ = std::move(snapshot);
  std::vector<std::unique_ptr<Tracked>> next;
  std::unordered_map<const fleet::ReplicaState*, size_t> next_index;
  for (const fleet::ModelEntry& model : snapshot_->models) {
    for (const fleet::ReplicaEntry& entry : model.replicas) {
      const fleet::ReplicaState* key = entry.state.get();
      if (!next_index.emplace(key, next.size()).second) continue;
      const auto it = index_.find(key);
      if (it != index_.end()) {
        next.push_back(std::move(tracked_[it->second]));
        continue;
      }
      next.push_back(std::make_unique<Tracked>(entry.state, settings_));
      if (added) added(entry.state);
    }
  }
  tracked_ = std::move(next);  // replicas that left the fleet are dropped
  index_ = std::move(next_index);
  // Per model, each replica's record and GPU type rank (types in name order), so that a tick
  // looks nothing up.
  views_.assign(snapshot_->models.size(), ModelView{});
  for (size_t m = 0; m < snapshot_->models.size(); ++m) {
    const fleet::ModelEntry& model = snapshot_->models[m];
    ModelView& view = views_[m];
    std::vector<std::string_view> gpus;
    for (const fleet::ReplicaEntry& entry : model.replicas) gpus.push_back(entry.gpu);
    std::sort(gpus.begin(), gpus.end());
    gpus.erase(std::unique(gpus.begin(), gpus.end()), gpus.end());
    view.gpu_count = gpus.size();
    view.placed_by_prediction =
        model.slo != nullptr &&
        onlySloStrategies(model.routing_strategy.empty() ? snapshot_->default_strategy
                                                         : model.routing_strategy);
    for (const fleet::ReplicaEntry& entry : model.replicas) {
      view.tracked.push_back(find(*entry.state));
      view.gpu_rank.push_back(static_cast<uint32_t>(
          std::lower_bound(gpus.begin(), gpus.end(), entry.gpu) - gpus.begin()));
    }
  }
}

void FleetHealth::apply(Tracked& tracked, const Transition& t, TimeNs now) {
  if (!t.changed) return;
  fleet::ReplicaState& replica = *tracked.replica;
  replica.storeHealth(t.to, t.reason);
  if (t.to == HealthState::kExcluded) {
    replica.counters().health_exclusions_total.fetch_add(1, std::memory_order_relaxed);
    // A fresh run of failures is needed to judge the replica again after its backoff.
    replica.counters().consecutive_failures.store(0, std::memory_order_relaxed);
  }
  if (t.to == HealthState::kHealthy) {
    replica.counters().health_recoveries_total.fetch_add(1, std::memory_order_relaxed);
    // Back in rotation with (almost) nothing in flight it would look like the least-loaded
    // replica and draw a stampede, just as a new one would; and we had a reason to doubt it.
    // Slow start eases it back in.
    replica.markReady(now);
  }
  std::string key = healthStateName(t.to);
  if (t.to != HealthState::kHealthy) key += std::string(":") + healthReasonName(t.reason);
  ++transitions_[key];
  if (t.to == HealthState::kExcluded) {
    spdlog::warn("health: {} excluded ({}), back in {} ms", replica.name(),
                 healthReasonName(t.reason), (tracked.health.excludedUntil() - now) / kNsPerMs);
  } else {
    spdlog::info("health: {} {} -> {}", replica.name(), healthStateName(t.from),
                 healthStateName(t.to));
  }
}

FleetHealth::Tracked* FleetHealth::find(const fleet::ReplicaState& replica) const {
  const auto it = index_.find(&replica);
  return it == index_.end() ? nullptr : tracked_[it->second].get();
}

bool FleetHealth::probeIsUrgent(const fleet::ReplicaState& replica) const {
  const Tracked* tracked = find(replica);
  if (tracked == nullptr) return false;
  const ReplicaHealth& health = tracked->health;
  return health.wantsConfirmingProbe() || health.state() != HealthState::kHealthy;
}

void FleetHealth::onProbe(const fleet::ReplicaState& replica, bool ok, TimeNs now) {
  Tracked* tracked = find(replica);
  if (tracked == nullptr) return;
  apply(*tracked, tracked->health.onProbe(ok, now), now);
}

namespace {

// Whether the largest value exceeds factor (>= 1) x the median (the value of rank n / 2), told
// by one count instead of selecting the median: on most health ticks nothing is near the
// threshold, and the selections were 3 % of a 1,000-replica simulation. factor x v < max is
// monotone in v, so the median passes it exactly when more than n / 2 values do.
bool maxAboveMultipleOfMedian(std::span<const double> values, double factor) {
  double max = -std::numeric_limits<double>::infinity();
  bool unordered = false;  // a NaN: leave it to the selection, as before
  for (double v : values) {
    max = v > max ? v : max;
    unordered |= std::isnan(v);
  }
  if (unordered) return true;
  size_t below = 0;
  for (double v : values) below += factor * v < max;
  return below > values.size() / 2;
}

}  // namespace

void FleetHealth::detectLoadOutliers(size_t m, TimeNs now) {
  const fleet::ModelEntry& model = snapshot_->models[m];
  const size_t n = model.replicas.size();
  if (n < 3) return;  // with fewer replicas an outlier is indistinguishable from the fleet
  if (views_[m].placed_by_prediction) return;
  // Load in the units load-balance balances, so that a replica carrying its fair share is never
  // the outlier: with the utilization score, in-flight requests scaled by how early the
  // replica's batching curve saturates (equal curves: equal in-flight counts are fair, whatever
  // the speeds); otherwise requests per unit of learned capacity.
  std::vector<std::pair<double, size_t>>& loads = scratch_loads_;  // comparable load, index
  loads.clear();
  const fleet::LearnedMeans means = model.runtime->learnedMeans();
  const double mean_capacity = std::isnan(means.decode) ? 1.0 : means.decode;
  const bool by_curve = model.load_balance.score == fleet::LoadBalanceScore::kUtilization &&
                        !std::isnan(means.slowdown);
  const double mean_slowdown = by_curve ? means.slowdown : 0.0;
  std::vector<double>& requests = scratch_requests_;
  requests.resize(n);
  size_t excluded = 0;
  for (size_t i = 0; i < n; ++i) {
    const fleet::ReplicaState& r = *model.replicas[i].state;
    const fleet::EngineSignals s = r.signals(now, snapshot_->signal_max_age);
    const double running = static_cast<double>(r.globalRunning());
    requests[i] = running + (s.hasWaiting() ? s.waiting : 0.0);
    const fleet::LearnedCapacity learned = r.capacity();
    if (by_curve) {
      const double s = fleet::shrunkSlowdown(learned.slowdown, mean_slowdown);
      loads.emplace_back(requests[i] * (1.0 + s * fleet::kReferenceConcurrency), i);
    } else {
      const double c = learned.decode;
      loads.emplace_back(requests[i] / (std::isfinite(c) && c > 0 ? c : mean_capacity), i);
    }
    excluded += r.health() == HealthState::kExcluded;
  }
  // The median, then only the replicas above the outlier threshold, worst first (what a full
  // sort walked from its end would visit before stopping).
  std::vector<double>& values = scratch_values_;
  values.clear();
  for (const auto& load : loads) values.push_back(load.first);
  if (!maxAboveMultipleOfMedian(values, settings_.outlier_factor)) return;
  std::nth_element(values.begin(), values.begin() + static_cast<ptrdiff_t>(n / 2), values.end());
  const double median = values[n / 2];
  if (median <= 0) return;
  const double threshold = settings_.outlier_factor * median;
  std::vector<std::pair<double, size_t>>& sorted = scratch_sorted_;
  sorted.clear();
  for (const auto& load : loads) {
    if (load.first > threshold) sorted.push_back(load);
  }
  std::sort(sorted.begin(), sorted.end(), std::greater<>());
  const size_t budget = static_cast<size_t>(settings_.outlier_max_fraction * n);
  // Never more than the budget: protection must not become an outage.
  for (auto it = sorted.begin(); it != sorted.end() && excluded < budget; ++it) {
    const size_t i = it->second;
    if (requests[i] < settings_.outlier_min_requests) continue;
    Tracked* tracked = views_[m].tracked[i];
    if (tracked == nullptr) continue;
    const Transition t = tracked->health.onLoadOutlier(now);
    if (!t.changed) continue;
    ++excluded;
    apply(*tracked, t, now);
  }
}

void FleetHealth::detectSlowReplicas(size_t m, TimeNs now) {
  // Peers of the same GPU type should decode at about the same speed under the same traffic; a
  // replica several times slower than their median is degraded, whatever its health path says.
  // GPU types in name order, peers in fleet order (ranks computed when the fleet changed).
  const fleet::ModelEntry& model = snapshot_->models[m];
  const ModelView& view = views_[m];
  auto& by_gpu = scratch_by_gpu_;
  by_gpu.resize(view.gpu_count);
  for (auto& peers : by_gpu) peers.clear();
  for (size_t i = 0; i < model.replicas.size(); ++i) {
    Tracked* t = view.tracked[i];
    if (t == nullptr || t->timed_tokens < static_cast<double>(settings_.slow_min_tokens)) continue;
    by_gpu[view.gpu_rank[i]].emplace_back(t->token_time_ns, t);
  }
  for (auto& peers : by_gpu) {
    if (peers.size() < 3) continue;  // with two, which one is the odd one out is unknowable
    std::vector<double>& times = scratch_times_;
    times.clear();
    for (const auto& [time, tracked] : peers) times.push_back(time);
    if (!maxAboveMultipleOfMedian(times, settings_.slow_factor)) continue;
    std::nth_element(times.begin(), times.begin() + static_cast<ptrdiff_t>(times.size() / 2),
                     times.end());
    const double median = times[times.size() / 2];
    const size_t budget = static_cast<size_t>(settings_.outlier_max_fraction *
                                              static_cast<double>(model.replicas.size()));
    // The replicas excluded already, counted when the first slow one is found (usually none is).
    size_t excluded = 0;
    bool counted = false;
    for (const auto& [time, tracked] : peers) {
      if (median <= 0 || time <= settings_.slow_factor * median) continue;
      if (!counted) {
        for (const auto& entry : model.replicas) {
          excluded += entry.state->health() == HealthState::kExcluded;
        }
        counted = true;
      }
      if (excluded >= budget) continue;
      const Transition t = tracked->health.onSlowOutlier(now);
      if (!t.changed) continue;
      ++excluded;
      apply(*tracked, t, now);
    }
  }
}

void FleetHealth::tick(TimeNs now,
                       const std::function<void(const fleet::ReplicaState&)>& wants_probe) {
  if (!snapshot_) return;
  for (const std::unique_ptr<Tracked>& tracked : tracked_) {
    const fleet::ReplicaCounters& c = tracked->replica->counters();
    // Fold the tokens timed since the last tick into the smoothed time per token.
    const int64_t ns = c.token_time_ns_total.load(std::memory_order_relaxed);
    const int64_t tokens = c.timed_tokens_total.load(std::memory_order_relaxed);
    if (tokens > tracked->seen_timed_tokens) {
      const double batch = static_cast<double>(ns - tracked->seen_token_time_ns) /
                           static_cast<double>(tokens - tracked->seen_timed_tokens);
      const double weight =
          std::min(1.0, static_cast<double>(tokens - tracked->seen_timed_tokens) /
                            std::max(1.0, static_cast<double>(settings_.slow_min_tokens)));
      tracked->token_time_ns =
          tracked->timed_tokens == 0
              ? batch
              : tracked->token_time_ns + weight * (batch - tracked->token_time_ns);
      tracked->timed_tokens += static_cast<double>(tokens - tracked->seen_timed_tokens);
    }
    tracked->seen_token_time_ns = ns;
    tracked->seen_timed_tokens = tokens;
    // apply() is out of line (it logs): called only on a change.
    const Transition ticked = tracked->health.onTick(now);
    if (ticked.changed) apply(*tracked, ticked, now);
    const Transition judged =
        tracked->health.onOutcomes(c.outcome_successes_total.load(std::memory_order_relaxed),
                                   c.outcome_failures_total.load(std::memory_order_relaxed),
                                   c.consecutive_failures.load(std::memory_order_relaxed), now);
    if (judged.changed) apply(*tracked, judged, now);
    // A suspect replica, or one whose backoff just ended, is probed now rather than at the next
    // probe interval.
    const bool urgent =
        tracked->health.wantsConfirmingProbe() || tracked->health.state() == HealthState::kHalfOpen;
    if (urgent && wants_probe) wants_probe(*tracked->replica);
  }
  for (size_t m = 0; m < snapshot_->models.size(); ++m) {
    const fleet::ModelEntry& model = snapshot_->models[m];
    detectLoadOutliers(m, now);
    detectSlowReplicas(m, now);
    int routable = 0;
    for (const auto& entry : model.replicas) {
      routable += entry.state->health() != HealthState::kExcluded && entry.state->lifecycle() == 0;
    }
    model.runtime->routable_replicas.store(routable, std::memory_order_relaxed);
    fleet::rescaleRateLimit(model, routable);
  }
}

}  // namespace switchyard::health
