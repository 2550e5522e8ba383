#include "fleet/scrape_schedule.h"

#include <algorithm>
#include <cmath>

namespace switchyard::fleet {
namespace {

bool moved(double a, double b, double tolerance) {
  if (std::isnan(a) != std::isnan(b)) return true;
  return !std::isnan(a) && std::abs(a - b) >= tolerance;
}

}  // namespace

void ScrapeHistory::record(bool ok, const EngineSignals& signals, const ScrapePolicy& policy) {
  const bool unchanged = ok && last_ok && !moved(signals.running, last.running, 1.0) &&
                         !moved(signals.waiting, last.waiting, 1.0) &&
                         !moved(signals.kv_usage, last.kv_usage, policy.stable_kv_delta);
  unchanged_runs = unchanged ? unchanged_runs + 1 : 0;
  last_ok = ok;
  last = ok ? signals : EngineSignals{};
}

namespace {

TimeNs periodOf(const ScrapePolicy& policy, TimeNs interval, double factor) {
  const auto period = static_cast<TimeNs>(static_cast<double>(interval) * factor);
  return std::max(std::min(policy.min_period, interval), period);
}

}  // namespace

TimeNs scrapePeriod(const ScrapePolicy& policy, TimeNs interval, const ScrapeHistory& history) {
  if (!policy.adaptive || !history.last_ok) return interval;
  if (history.last.hasKvUsage() && history.last.kv_usage >= policy.hot_kv_usage) {
    return shortestScrapePeriod(policy, interval);
  }
  if (history.unchanged_runs >= policy.stable_after) {
    return periodOf(policy, interval, std::max(1.0, policy.stable_stretch));
  }
  return periodOf(policy, interval, 1.0);
}

TimeNs shortestScrapePeriod(const ScrapePolicy& policy, TimeNs interval) {
  if (!policy.adaptive) return interval;
  return periodOf(policy, interval, 1.0 / std::max(1.0, policy.hot_speedup));
}

void ScrapeBudget::configure(double rate, TimeNs interval) {
  rate_ = rate > 0 ? rate : 0;
  // A tenth of an interval's worth may go at once: enough to absorb timer jitter, too little
  // to let a burst of due replicas exceed the rate for long.
  burst_ = std::max(1.0, rate_ * static_cast<double>(interval) / 10.0 / kNsPerSec);
  tokens_ = std::min(tokens_, burst_);
}

void ScrapeBudget::refill(TimeNs now) {
  if (!started_) {
    started_ = true;
    last_ = now;
    tokens_ = burst_;
    return;
  }
  if (now > last_) {
    tokens_ = std::min(burst_, tokens_ + rate_ * static_cast<double>(now - last_) / kNsPerSec);
    last_ = now;
  }
}

bool ScrapeBudget::take(TimeNs now) {
  if (rate_ <= 0) return true;
  refill(now);
  if (tokens_ < 1.0) return false;
  tokens_ -= 1.0;
  return true;
}

TimeNs ScrapeBudget::nextToken(TimeNs now) const {
  if (rate_ <= 0 || tokens_ >= 1.0) return now;
  return now + static_cast<TimeNs>(std::ceil((1.0 - tokens_) / rate_ * kNsPerSec));
}

int rendezvousOwner(uint64_t replica, std::span<const uint64_t> gateways) {
  int best = -1;
  uint64_t best_score = 0;
  for (size_t i = 0; i < gateways.size(); ++i) {
    const uint64_t score = mixHash(gateways[i] ^ mixHash(replica));
    if (best < 0 || score > best_score ||
        (score == best_score && gateways[i] > gateways[static_cast<size_t>(best)])) {
      best = static_cast<int>(i);
      best_score = score;
    }
  }
  return best;
}

uint64_t stableHash(std::string_view text) {
  uint64_t h = 14695981039346656037ull;
  for (const char c : text) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ull;
  return h;
}

}  // namespace switchyard::fleet
