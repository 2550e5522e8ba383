#include "fleet/capacity_estimator.h"

#include <cmath>

namespace switchyard::fleet {

CapacityCounters CapacityCounters::of(const ReplicaCounters& c) {
  CapacityCounters out;
  out.output_tokens = c.output_tokens_total.load(std::memory_order_relaxed);
  out.prefill_tokens = c.prefill_tokens_total.load(std::memory_order_relaxed);
  out.prefill_ns = c.prefill_ns_total.load(std::memory_order_relaxed);
  out.tokenless_requests = c.tokenless_requests_total.load(std::memory_order_relaxed);
  out.tokenless_latency_ns = c.tokenless_latency_ns_total.load(std::memory_order_relaxed);
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

void CapacityEstimator::observe(TimeNs now, const CapacityCounters& cumulative) {
  if (samples_.empty()) {
    samples_.push_back({now, cumulative});
    last_update_ = now;
    return;
  }
  const CapacityCounters& previous = samples_.back().counters;
  const bool new_tokens = cumulative.output_tokens > previous.output_tokens;
  const bool new_tokenless = cumulative.tokenless_requests > previous.tokenless_requests;
  const bool new_prefill = cumulative.prefill_tokens > previous.prefill_tokens &&
                           cumulative.prefill_ns > previous.prefill_ns;
  samples_.push_back({now, cumulative});
  // Keep one sample at or before the window's start so the window spans the full period.
  while (samples_.size() > 2 && samples_[1].at <= now - settings_.window) samples_.pop_front();

  const Sample& oldest = samples_.front();
  const TimeNs span = now - oldest.at;
  const TimeNs dt = now - last_update_;
  last_update_ = now;
  if (span <= 0) return;
  const double seconds = static_cast<double>(span) / kNsPerSec;

  if (new_tokens) {
    const double rate =
        static_cast<double>(cumulative.output_tokens - oldest.counters.output_tokens) / seconds;
    if (learned_.tokenless) learned_.decode = std::nan("");  // the work changed kind: restart
    learned_.tokenless = false;
    smooth(learned_.decode, rate, dt);
  } else if (new_tokenless && (learned_.tokenless || std::isnan(learned_.decode))) {
    const double latency_seconds =
        static_cast<double>(cumulative.tokenless_latency_ns - oldest.counters.tokenless_latency_ns) /
        kNsPerSec;
    const double requests =
        static_cast<double>(cumulative.tokenless_requests - oldest.counters.tokenless_requests);
    if (latency_seconds > 0) {
      learned_.tokenless = true;
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
