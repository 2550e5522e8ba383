#include "sim/shared_view.h"

#include <algorithm>

namespace switchyard::sim {

void SharedView::resize(size_t replicas) {
  for (auto& a : admitted_) a.resize(replicas, 0);
  for (auto& h : held_) h.resize(replicas, 0);
}

void SharedView::publish(int g, const std::vector<ReplicaReport>& report, TimeNs now) {
  reports_[static_cast<size_t>(g)] = report;
  published_at_[static_cast<size_t>(g)] = now;
}

void SharedView::read(int g, TimeNs now, bool counted_on_path, SyncView& out) const {
  const size_t n = admitted_.empty() ? 0 : admitted_[0].size();
  out.others_running.assign(n, 0);
  out.global.assign(n, fleet::CapacityCounters{});
  out.live_gateways = 0;
  out.gateway_rank = 0;
  for (size_t other = 0; other < reports_.size(); ++other) {
    const bool is_live = live(other, now);
    out.live_gateways += is_live;
    if (is_live && static_cast<int>(other) < g) ++out.gateway_rank;
    const std::vector<ReplicaReport>& report = reports_[other];
    for (size_t r = 0; r < report.size() && r < n; ++r) {
      // Counters are summed over every gateway that ever reported, as the live store keeps them.
      fleet::CapacityCounters& sum = out.global[r];
      const fleet::CapacityCounters& c = report[r].counters;
      sum.output_tokens += c.output_tokens;
      sum.prefill_tokens += c.prefill_tokens;
      sum.prefill_ns += c.prefill_ns;
      sum.tokenless_requests += c.tokenless_requests;
      sum.tokenless_latency_ns += c.tokenless_latency_ns;
      sum.token_time_ns += c.token_time_ns;
      sum.timed_tokens += c.timed_tokens;
      sum.token_concurrency += c.token_concurrency;
      if (is_live && static_cast<int>(other) != g && !counted_on_path) {
        out.others_running[r] += report[r].running;
      }
    }
    if (counted_on_path && is_live && static_cast<int>(other) != g) {
      const std::vector<int32_t>& admitted = admitted_[other];
      for (size_t r = 0; r < n; ++r) out.others_running[r] += admitted[r];
    }
  }
  out.live_gateways = std::max(1, out.live_gateways);
}

SharedVerdict SharedView::admit(int g, uint32_t replica, int64_t limit, double rate, double burst,
                                TimeNs now, TimeNs* retry_after) {
  if (down_) return SharedVerdict::kDegraded;
  if (limit > 0) {
    if (inflightCounted(g, replica, now) >= limit) return SharedVerdict::kInflightLimit;
  }
  if (rate > 0) {
    if (rate != rate_configured_) {
      rate_.configure(rate, burst);
      rate_configured_ = rate;
    }
    if (const TimeNs wait = rate_.tryAcquire(now); wait > 0) {
      *retry_after = wait;
      return SharedVerdict::kRateLimited;
    }
  }
  ++admitted_[static_cast<size_t>(g)][replica];
  return SharedVerdict::kAdmitted;
}

void SharedView::release(int g, uint32_t replica) {
  int32_t& count = admitted_[static_cast<size_t>(g)][replica];
  if (count > 0) --count;
}

int64_t SharedView::inflightCounted(int g, uint32_t replica, TimeNs now) const {
  int64_t inflight = 0;
  for (size_t other = 0; other < admitted_.size(); ++other) {
    if (static_cast<int>(other) == g || live(other, now)) {
      inflight += admitted_[other][replica] + held_[other][replica];
    }
  }
  return inflight;
}

int64_t SharedView::growSlots(int g, uint32_t replica, int64_t limit, int64_t want, TimeNs now) {
  if (down_) return -1;
  const int64_t granted = std::clamp<int64_t>(limit - inflightCounted(g, replica, now), 0, want);
  held_[static_cast<size_t>(g)][replica] += static_cast<int32_t>(granted);
  return granted;
}

void SharedView::changeSlots(int g, uint32_t replica, int64_t delta) {
  int32_t& held = held_[static_cast<size_t>(g)][replica];
  held = static_cast<int32_t>(std::max<int64_t>(0, held + delta));
}

void SharedView::forget(int g) {
  std::fill(admitted_[static_cast<size_t>(g)].begin(), admitted_[static_cast<size_t>(g)].end(), 0);
  std::fill(held_[static_cast<size_t>(g)].begin(), held_[static_cast<size_t>(g)].end(), 0);
}

int SharedView::pinned(uint64_t session) const {
  const auto it = pins_.find(session);
  return it == pins_.end() ? -1 : it->second;
}

}  // namespace switchyard::sim
