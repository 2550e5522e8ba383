#include "sim/shared_view.h"

#include <algorithm>

namespace switchyard::sim {

void SharedView::resize(size_t replicas) {
  for (auto& a : admitted_) a.resize(replicas, 0);
  for (auto& h : held_) h.resize(replicas, 0);
}

namespace {

// sum += to - from, field by field (the counters are integers: the sums stay exact).
inline void shift(fleet::CapacityCounters& sum, const fleet::CapacityCounters& from,
                  const fleet::CapacityCounters& to) {
  sum.output_tokens += to.output_tokens - from.output_tokens;
  sum.prefill_tokens += to.prefill_tokens - from.prefill_tokens;
  sum.prefill_ns += to.prefill_ns - from.prefill_ns;
  sum.tokenless_requests += to.tokenless_requests - from.tokenless_requests;
  sum.tokenless_latency_ns += to.tokenless_latency_ns - from.tokenless_latency_ns;
  sum.token_time_ns += to.token_time_ns - from.token_time_ns;
  sum.timed_tokens += to.timed_tokens - from.timed_tokens;
  sum.token_concurrency += to.token_concurrency - from.token_concurrency;
}

}  // namespace

void SharedView::publish(int g, const std::vector<ReplicaReport>& report, TimeNs now) {
  // The counters summed over every gateway change by what this gateway's report changed: a
  // read copies the sums instead of adding up every gateway's report again. One pass moves the
  // sums and keeps the new report.
  std::vector<ReplicaReport>& kept = reports_[static_cast<size_t>(g)];
  if (global_.size() < report.size()) global_.resize(report.size());
  const fleet::CapacityCounters none{};
  for (size_t r = report.size(); r < kept.size(); ++r) shift(global_[r], kept[r].counters, none);
  kept.resize(report.size());
  for (size_t r = 0; r < report.size(); ++r) {
    shift(global_[r], kept[r].counters, report[r].counters);
    kept[r] = report[r];
  }
  published_at_[static_cast<size_t>(g)] = now;
}

void SharedView::read(int g, TimeNs now, bool counted_on_path, SyncView& out) const {
  const size_t n = admitted_.empty() ? 0 : admitted_[0].size();
  out.others_running.assign(n, 0);
  // Counters are summed over every gateway that ever reported, as the live store keeps them.
  const size_t summed = std::min(n, global_.size());
  out.global.assign(global_.begin(), global_.begin() + static_cast<ptrdiff_t>(summed));
  out.global.resize(n);
  out.live_gateways = 0;
  out.gateway_rank = 0;
  for (size_t other = 0; other < reports_.size(); ++other) {
    const bool is_live = live(other, now);
    out.live_gateways += is_live;
    if (is_live && static_cast<int>(other) < g) ++out.gateway_rank;
    if (!is_live || static_cast<int>(other) == g) continue;
    if (counted_on_path) {
      const std::vector<int32_t>& admitted = admitted_[other];
      for (size_t r = 0; r < n; ++r) out.others_running[r] += admitted[r];
    } else {
      const std::vector<ReplicaReport>& report = reports_[other];
      const size_t reported = std::min(n, report.size());
      for (size_t r = 0; r < reported; ++r) out.others_running[r] += report[r].running;
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
