#include "fleet/capacity_estimator.h"

#include <algorithm>
#include <cmath>

namespace switchyard::fleet {
namespace {

// Prior variance of the concurrency, in streams², per unit of sample weight: the ridge term that
// shrinks the fitted slope towards 0 when the window's concurrency hardly varied.
constexpr double kSlopePriorVariance = 1.0;
// The steepest batching curve believed: per-token time doubling by one extra stream. Keeps the
// slowdown finite when the fitted t(0) comes out at (or near) zero.
constexpr double kSteepestFittedSlowdown = 1.0;

bool wentBackwards(const CapacityCounters& now, const CapacityCounters& before) {
  return now.output_tokens < before.output_tokens || now.prefill_tokens < before.prefill_tokens ||
         now.prefill_ns < before.prefill_ns || now.tokenless_requests < before.tokenless_requests ||
         now.tokenless_latency_ns < before.tokenless_latency_ns ||
         now.token_time_ns < before.token_time_ns || now.timed_tokens < before.timed_tokens ||
         now.token_concurrency < before.token_concurrency;
}

}  // namespace

CapacityCounters CapacityCounters::of(const ReplicaCounters& c) {
  CapacityCounters out;
  out.output_tokens = c.output_tokens_total.load(std::memory_order_relaxed);
  out.prefill_tokens = c.prefill_tokens_total.load(std::memory_order_relaxed);
  out.prefill_ns = c.prefill_ns_total.load(std::memory_order_relaxed);
  out.tokenless_requests = c.tokenless_requests_total.load(std::memory_order_relaxed);
  out.tokenless_latency_ns = c.tokenless_latency_ns_total.load(std::memory_order_relaxed);
  out.token_time_ns = c.token_time_ns_total.load(std::memory_order_relaxed);
  out.timed_tokens = c.timed_tokens_total.load(std::memory_order_relaxed);
  out.token_concurrency = c.token_concurrency_total.load(std::memory_order_relaxed);
  return out;
}

void CapacityEstimator::smooth(double& estimate, double rate, TimeNs dt) {
  if (std::isnan(estimate)) {
    estimate = rate;  // the first measurement is taken as it is
    return;
  }
  const double alpha = 1.0 - std::exp(-static_cast<double>(dt) /
                                      static_cast<double>(settings_.time_constant));
  estimate += alpha * (rate - estimate);
}

CapacityEstimator::Point CapacityEstimator::pointBetween(const Sample& a, const Sample& b) {
  // One point per refresh interval that timed tokens: (concurrency, seconds per token), weighted
  // by its tokens. The concurrency is the one the responses themselves saw (token_concurrency),
  // or, from a source that does not count it, the mean of the interval's two end samples: a
  // response that took seconds saw more than the instant it completed at, and pairing it with
  // that instant flattens the fitted slope.
  Point p;
  const double w = static_cast<double>(b.counters.timed_tokens - a.counters.timed_tokens);
  if (w <= 0) return p;
  const double seconds =
      static_cast<double>(b.counters.token_time_ns - a.counters.token_time_ns) / kNsPerSec;
  const double seen =
      static_cast<double>(b.counters.token_concurrency - a.counters.token_concurrency);
  p.w = w;
  p.t = seconds / w;
  p.n = seen > 0 ? 0.5 * seen / w : 0.5 * (a.concurrency + b.concurrency);
  p.unknown_n = std::isnan(p.n);
  return p;
}

void CapacityEstimator::PointSums::add(const Point& p, double sign) {
  if (p.w <= 0) return;
  if (points == 0) {
    *this = {};
    n0 = p.unknown_n ? 0 : p.n;
    t0 = p.t;
  }
  points += sign > 0 ? 1 : -1;
  if (p.unknown_n) unknown_n += sign > 0 ? 1 : -1;
  if (points == 0) {
    *this = {};  // empty: no rounding residue carried into the next points
    return;
  }
  const double sw = sign * p.w;
  const double dn_i = p.unknown_n ? 0 : p.n - n0;
  const double dt_i = p.t - t0;
  w += sw;
  dn += sw * dn_i;
  dt += sw * dt_i;
  dnn += sw * dn_i * dn_i;
  dnt += sw * dn_i * dt_i;
}

void CapacityEstimator::resum() {
  sums_ = {};
  for (size_t j = 1; j < samples_.size(); ++j) {
    sums_.add(pointBetween(samples_[j - 1], samples_[j]), 1);
  }
  dropped_since_resum_ = 0;
}

void CapacityEstimator::append(const Sample& sample) {
  if (samples_.full()) samples_.set_capacity(std::max<size_t>(8, 2 * samples_.capacity()));
  samples_.push_back(sample);
}

void CapacityEstimator::dropOldest() {
  // The second sample becomes the oldest: its interval leaves the window (the point is computed
  // again, exactly as when it was added).
  sums_.add(pointBetween(samples_[0], samples_[1]), -1);
  samples_.pop_front();
  if (++dropped_since_resum_ >= samples_.size()) resum();
}

CapacityEstimator::CurvePoint CapacityEstimator::decodeFromTokenTimes() {
  // The weighted least-squares line through the window's points (header comment), from their
  // sums of deviations: Σw(n − n̄)² = Σw·dn² − (Σw·dn)²/Σw, likewise for n and t.
  const PointSums& s = sums_;
  const double t_mean = s.w > 0 ? s.t0 + s.dt / s.w : 0;  // token-weighted seconds per token
  if (s.w <= 0 || !(t_mean > 0)) return {kNaN, kNaN};
  double slope = 0;
  double n_mean = kNaN;
  if (s.unknown_n == 0) {
    n_mean = s.n0 + s.dn / s.w;
    const double s_nn = std::max(0.0, s.dnn - s.dn * s.dn / s.w);
    const double s_nt = s.dnt - s.dn * s.dt / s.w;
    slope = s_nt / (s_nn + kSlopePriorVariance * s.w);
    // Per-token time does not fall with load, and t(0) = a cannot be negative.
    const double max_slope = n_mean > 0 ? t_mean / n_mean : 0;
    slope = std::clamp(slope, 0.0, max_slope);
  }
  fit_ = {n_mean, t_mean, slope};
  const double n_ref = kReferenceConcurrency;
  if (std::isnan(n_mean)) return {n_ref / t_mean, kNaN};
  const double at_zero = t_mean - slope * n_mean;
  // b / a, capped: a fitted t(0) at or near zero would make it unbounded.
  const double slowdown =
      at_zero * kSteepestFittedSlowdown > slope ? slope / at_zero : kSteepestFittedSlowdown;
  return {n_ref / (t_mean + slope * (n_ref - n_mean)), slowdown};
}

void CapacityEstimator::observe(TimeNs now, const CapacityCounters& cumulative,
                                double concurrency) {
  if (!(concurrency >= 0)) concurrency = kNaN;  // unknown (NaN or negative)
  if (!samples_.empty() && wentBackwards(cumulative, samples_.back().counters)) {
    samples_.clear();  // a summed source lost a contributor: restart the window, keep estimates
    resum();
  }
  if (samples_.empty()) {
    append({now, cumulative, concurrency});
    last_update_ = now;
    return;
  }
  const CapacityCounters& previous = samples_.back().counters;
  const bool new_tokens = cumulative.output_tokens > previous.output_tokens;
  const bool new_tokenless = cumulative.tokenless_requests > previous.tokenless_requests;
  const bool new_prefill = cumulative.prefill_tokens > previous.prefill_tokens &&
                           cumulative.prefill_ns > previous.prefill_ns;
  append({now, cumulative, concurrency});
  sums_.add(pointBetween(samples_[samples_.size() - 2], samples_.back()), 1);
  // Keep one sample at or before the window's start so the window spans the full period.
  while (samples_.size() > 2 && samples_[1].at <= now - settings_.window) dropOldest();

  const Sample& oldest = samples_.front();
  const TimeNs span = now - oldest.at;
  const TimeNs dt = now - last_update_;
  last_update_ = now;
  if (span <= 0) return;
  const double seconds = static_cast<double>(span) / kNsPerSec;

  if (new_tokens) {
    const CurvePoint curve = decodeFromTokenTimes();
    double rate = curve.decode;
    if (std::isnan(rate)) {  // no per-token times from this source: the plain output rate
      rate = static_cast<double>(cumulative.output_tokens - oldest.counters.output_tokens) /
             seconds;
    }
    if (learned_.tokenless) learned_.decode = kNaN;  // the work changed kind: restart
    learned_.tokenless = false;
    smooth(learned_.decode, rate, dt);
    if (!std::isnan(curve.slowdown)) smooth(learned_.slowdown, curve.slowdown, dt);
  } else if (new_tokenless && (learned_.tokenless || std::isnan(learned_.decode))) {
    const double latency_seconds =
        static_cast<double>(cumulative.tokenless_latency_ns - oldest.counters.tokenless_latency_ns) /
        kNsPerSec;
    const double requests =
        static_cast<double>(cumulative.tokenless_requests - oldest.counters.tokenless_requests);
    if (latency_seconds > 0) {
      learned_.tokenless = true;
      learned_.slowdown = kNaN;  // no per-token curve for tokenless work
      smooth(learned_.decode, requests / latency_seconds, dt);
    }
  }
  if (new_prefill) {
    const double prefill_seconds =
        static_cast<double>(cumulative.prefill_ns - oldest.counters.prefill_ns) / kNsPerSec;
    const double tokens =
        static_cast<double>(cumulative.prefill_tokens - oldest.counters.prefill_tokens);
    if (prefill_seconds > 0) smooth(learned_.prefill, tokens / prefill_seconds, dt);
  }
}

}  // namespace switchyard::fleet
