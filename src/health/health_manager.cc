#include "health/health_manager.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <cmath>
#include <vector>

#include "fleet/batching_curve.h"

#include "fleet/fleet_registry.h"
#include "http/control_client.h"

namespace switchyard::health {

namespace asio = boost::asio;
using fleet::HealthState;

struct HealthManager::Tracked {
  Tracked(asio::io_context& io, std::shared_ptr<fleet::ReplicaState> r,
          const HealthSettings& settings)
      : replica(std::move(r)),
        health(settings),
        timer(io),
        client(io, replica->host(), replica->port(), replica->name()) {}
  std::shared_ptr<fleet::ReplicaState> replica;
  ReplicaHealth health;
  asio::steady_timer timer;  // the probe loop's wait; cancelled for a confirming probe
  http::ControlHttpClient client;
  bool stopped = false;
  bool probing = false;
  // Smoothed time per output token and how many tokens it rests on (slow-replica detection).
  double token_time_ns = 0;
  double timed_tokens = 0;
  int64_t seen_token_time_ns = 0;
  int64_t seen_timed_tokens = 0;
  int64_t successes_at_last_round = -1;  // outcome successes when the probe loop last woke
};

HealthManager::HealthManager(asio::io_context& io, const Clock& clock, HealthSettings settings)
    : io_(io), clock_(clock), settings_(std::move(settings)) {
  probe_budget_.configure(settings_.max_probes_per_second, settings_.probe_interval);
}

HealthManager::~HealthManager() { stopAll(); }

void HealthManager::stopAll() {
  for (auto& [key, tracked] : tracked_) {
    tracked->stopped = true;
    tracked->timer.cancel();
  }
  tracked_.clear();
}

void HealthManager::sync(std::shared_ptr<const fleet::FleetSnapshot> snapshot) {
  snapshot_ = std::move(snapshot);
  std::map<const fleet::ReplicaState*, std::shared_ptr<Tracked>> next;
  for (const fleet::ModelEntry& model : snapshot_->models) {
    for (const fleet::ReplicaEntry& entry : model.replicas) {
      const fleet::ReplicaState* key = entry.state.get();
      if (next.count(key)) continue;
      auto it = tracked_.find(key);
      if (it != tracked_.end()) {
        next.emplace(key, it->second);
        tracked_.erase(it);
        continue;
      }
      auto tracked = std::make_shared<Tracked>(io_, entry.state, settings_);
      next.emplace(key, tracked);
      startProbing(tracked);
    }
  }
  for (auto& [key, tracked] : tracked_) {  // replicas that left the fleet
    tracked->stopped = true;
    tracked->timer.cancel();
  }
  tracked_ = std::move(next);
}

void HealthManager::apply(Tracked& tracked, const Transition& t) {
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
    replica.markReady(clock_.now());
  }
  std::string key = healthStateName(t.to);
  if (t.to != HealthState::kHealthy) key += std::string(":") + healthReasonName(t.reason);
  ++transitions_[key];
  if (t.to == HealthState::kExcluded) {
    spdlog::warn("health: {} excluded ({}), back in {} ms", replica.name(),
                 healthReasonName(t.reason),
                 (tracked.health.excludedUntil() - clock_.now()) / kNsPerMs);
  } else {
    spdlog::info("health: {} {} -> {}", replica.name(), healthStateName(t.from),
                 healthStateName(t.to));
  }
}

void HealthManager::startProbing(const std::shared_ptr<Tracked>& tracked) {
  asio::co_spawn(
      io_,
      [this, tracked]() -> asio::awaitable<void> {
        constexpr auto kTuple = asio::as_tuple(asio::use_awaitable);
        while (!tracked->stopped) {
          const bool urgent = tracked->health.wantsConfirmingProbe() ||
                              tracked->health.state() != HealthState::kHealthy;
          const fleet::ReplicaCounters& c = tracked->replica->counters();
          const int64_t successes = c.outcome_successes_total.load(std::memory_order_relaxed);
          const bool proven = settings_.skip_probes_with_traffic &&
                              tracked->successes_at_last_round >= 0 &&
                              successes > tracked->successes_at_last_round &&
                              c.consecutive_failures.load(std::memory_order_relaxed) == 0;
          tracked->successes_at_last_round = successes;
          bool skip = false;
          if (!urgent && proven) {
            ++skipped_traffic_;
            skip = true;
          } else if (!urgent && !probe_budget_.take(clock_.now())) {
            ++deferred_budget_;
            skip = true;
          }
          if (skip) {
            tracked->timer.expires_after(std::chrono::nanoseconds(settings_.probe_interval));
            co_await tracked->timer.async_wait(kTuple);
            continue;
          }
          ++probes_;
          tracked->probing = true;
          const http::GetResult result = co_await tracked->client.get(
              settings_.probe_path, std::chrono::nanoseconds(settings_.probe_timeout), 64 * 1024);
          tracked->probing = false;
          if (tracked->stopped) break;
          const bool ok = result.status >= 200 && result.status < 300;
          if (!ok) tracked->client.close();
          apply(*tracked, tracked->health.onProbe(ok, clock_.now()));
          tracked->timer.expires_after(std::chrono::nanoseconds(settings_.probe_interval));
          co_await tracked->timer.async_wait(kTuple);
        }
      },
      asio::detached);
}

void HealthManager::detectLoadOutliers(const fleet::ModelEntry& model, TimeNs now) {
  const size_t n = model.replicas.size();
  if (n < 3) return;  // with fewer replicas an outlier is indistinguishable from the fleet
  // Load in the units load-balance balances, so that a replica carrying its fair share is never
  // the outlier: with the utilization score, in-flight requests scaled by how early the
  // replica's batching curve saturates (equal curves: equal in-flight counts are fair, whatever
  // the speeds); otherwise requests per unit of learned capacity.
  std::vector<std::pair<double, size_t>> loads;  // comparable load, replica index
  const fleet::LearnedMeans means = model.runtime->learnedMeans();
  const double mean_capacity = std::isnan(means.decode) ? 1.0 : means.decode;
  const bool by_curve = model.load_balance.score == fleet::LoadBalanceScore::kUtilization &&
                        !std::isnan(means.slowdown);
  const double mean_slowdown = by_curve ? means.slowdown : 0.0;
  std::vector<double> requests(n);
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
  }
  std::vector<std::pair<double, size_t>> sorted = loads;
  std::sort(sorted.begin(), sorted.end());
  const double median = sorted[n / 2].first;
  size_t excluded = 0;
  for (const auto& entry : model.replicas) {
    excluded += entry.state->health() == HealthState::kExcluded;
  }
  const size_t budget = static_cast<size_t>(settings_.outlier_max_fraction * n);
  // Worst first, and never more than the budget: protection must not become an outage.
  for (auto it = sorted.rbegin(); it != sorted.rend() && excluded < budget; ++it) {
    const size_t i = it->second;
    if (it->first <= settings_.outlier_factor * median || median <= 0) break;
    if (requests[i] < settings_.outlier_min_requests) continue;
    auto tracked = tracked_.find(model.replicas[i].state.get());
    if (tracked == tracked_.end()) continue;
    const Transition t = tracked->second->health.onLoadOutlier(now);
    if (t.changed) ++excluded;
    apply(*tracked->second, t);
  }
}

void HealthManager::detectSlowReplicas(const fleet::ModelEntry& model, TimeNs now) {
  // Peers of the same GPU type should decode at about the same speed under the same traffic; a
  // replica several times slower than their median is degraded, whatever its health path says.
  std::map<std::string_view, std::vector<std::pair<double, Tracked*>>> by_gpu;
  for (const auto& entry : model.replicas) {
    auto it = tracked_.find(entry.state.get());
    if (it == tracked_.end()) continue;
    Tracked& t = *it->second;
    if (t.timed_tokens < static_cast<double>(settings_.slow_min_tokens)) continue;
    by_gpu[entry.gpu].emplace_back(t.token_time_ns, &t);
  }
  for (auto& [gpu, peers] : by_gpu) {
    if (peers.size() < 3) continue;  // with two, which one is the odd one out is unknowable
    std::vector<double> times;
    for (const auto& [time, tracked] : peers) times.push_back(time);
    std::nth_element(times.begin(), times.begin() + times.size() / 2, times.end());
    const double median = times[times.size() / 2];
    size_t excluded = 0;
    for (const auto& entry : model.replicas) {
      excluded += entry.state->health() == HealthState::kExcluded;
    }
    const size_t budget = static_cast<size_t>(settings_.outlier_max_fraction *
                                              static_cast<double>(model.replicas.size()));
    for (const auto& [time, tracked] : peers) {
      if (excluded >= budget || median <= 0 || time <= settings_.slow_factor * median) continue;
      const Transition t = tracked->health.onSlowOutlier(now);
      if (t.changed) ++excluded;
      apply(*tracked, t);
    }
  }
}

void HealthManager::tick() {
  if (!snapshot_) return;
  const TimeNs now = clock_.now();
  for (auto& [key, tracked] : tracked_) {
    const fleet::ReplicaCounters& c = tracked->replica->counters();
    // Fold the tokens timed since the last tick into the smoothed time per token.
    const int64_t ns = c.token_time_ns_total.load(std::memory_order_relaxed);
    const int64_t tokens = c.timed_tokens_total.load(std::memory_order_relaxed);
    if (tokens > tracked->seen_timed_tokens) {
      const double batch = static_cast<double>(ns - tracked->seen_token_time_ns) /
                           static_cast<double>(tokens - tracked->seen_timed_tokens);
      const double weight = std::min(
          1.0, static_cast<double>(tokens - tracked->seen_timed_tokens) /
                   std::max(1.0, static_cast<double>(settings_.slow_min_tokens)));
      tracked->token_time_ns = tracked->timed_tokens == 0
                                   ? batch
                                   : tracked->token_time_ns + weight * (batch - tracked->token_time_ns);
      tracked->timed_tokens += static_cast<double>(tokens - tracked->seen_timed_tokens);
    }
    tracked->seen_token_time_ns = ns;
    tracked->seen_timed_tokens = tokens;
    apply(*tracked, tracked->health.onTick(now));
    apply(*tracked, tracked->health.onOutcomes(
                        c.outcome_successes_total.load(std::memory_order_relaxed),
                        c.outcome_failures_total.load(std::memory_order_relaxed),
                        c.consecutive_failures.load(std::memory_order_relaxed), now));
    // A suspect replica, or one whose backoff just ended, is probed now rather than at the next
    // probe interval.
    const bool urgent = tracked->health.wantsConfirmingProbe() ||
                        tracked->health.state() == HealthState::kHalfOpen;
    if (urgent && !tracked->probing) tracked->timer.cancel();
  }
  for (const fleet::ModelEntry& model : snapshot_->models) {
    detectLoadOutliers(model, now);
    detectSlowReplicas(model, now);
    int routable = 0;
    for (const auto& entry : model.replicas) {
      routable += entry.state->health() != HealthState::kExcluded;
    }
    model.runtime->routable_replicas.store(routable, std::memory_order_relaxed);
    fleet::rescaleRateLimit(model, routable);
  }
}

}  // namespace switchyard::health
