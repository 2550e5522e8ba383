// Statistics: each request's outcome into its GPU type's group and the whole run's, the
// per-second series, engine queue depths, and the run's result.
#include <fmt/format.h>

#include <cmath>

#include "sim/simulator_impl.h"

namespace switchyard::sim {
namespace {

constexpr double kNsPerMsD = 1e6;

bool within(double limit, double value) { return limit <= 0 || value <= limit; }

}  // namespace

void Simulator::startWindow(SimReplica& r) {
  catchUp(r);
  r.window_busy_start = r.busySeconds();
  r.window_tokens_start = r.generatedTokens();
}

void Simulator::endWindow() {
  if (window_closed_) return;
  window_closed_ = true;
  const TimeNs begin = scenario_.warmup;
  for (SimReplica& r : replicas_) {
    catchUp(r);
    const TimeNs start = std::max(begin, r.added_at);
    // A removed replica counts (and costs) until it leaves the fleet: until its last request
    // ended when it drained, until it was stopped when killed.
    const TimeNs stop =
        r.removed_at >= 0 ? std::min(end_, r.drained_at >= 0 ? r.drained_at : end_) : end_;
    if (stop <= start) continue;
    for (GroupStats* group : {&groups_[r.gpu_type], &groups_.back()}) {
      group->replica_seconds += static_cast<double>(stop - start) / kNsPerSec;
      group->busy_seconds += r.busySeconds() - r.window_busy_start;
      group->generated_tokens += static_cast<double>(r.generatedTokens() - r.window_tokens_start);
    }
  }
}

void Simulator::recordOutcome(const SimRequest& q, Outcome outcome, TimeNs done) {
  const bool routed = q.sent >= 0;
  const size_t type = routed ? replicas_[q.replica].gpu_type : groups_.size() - 1;
  const TimeNs latency = scenario_.gateways.network_latency;
  double ttft = NAN, tpot = NAN, e2e = NAN;
  if (outcome == Outcome::kOk) {
    ttft = static_cast<double>(q.first_token + latency - q.arrival) / kNsPerMsD;
    e2e = static_cast<double>(done - q.arrival) / kNsPerMsD;
    if (q.output_tokens >= 2) tpot = (e2e - ttft) / (q.output_tokens - 1);
  }
  // This second's series, whether measured or not.
  for (size_t g : {type, groups_.size() - 1}) {
    SecondRow& row = second_counts_[g];
    if (outcome == Outcome::kOk) {
      ++row.completed;
      row.output_tokens += q.output_tokens;
      second_ttft_[g].add(ttft);
      second_e2e_[g].add(e2e);
    } else if (isRefusal(outcome)) {
      ++row.refused;
    } else {
      ++row.failed;
    }
    if (g == groups_.size() - 1) break;
  }
  if (!q.measured) return;
  for (size_t g : {type, groups_.size() - 1}) {
    GroupStats& s = groups_[g];
    ++s.requests;
    ++s.outcomes[static_cast<size_t>(outcome)];
    if (outcome == Outcome::kOk) {
      s.output_tokens += q.output_tokens;
      s.ttft_ms.add(ttft);
      s.e2e_ms.add(e2e);
      if (!std::isnan(tpot)) s.tpot_ms.add(tpot);
      const Slo& slo = scenario_.record.slo;
      // A one-token answer has no inter-token time: it meets any TPOT limit (as the load
      // generator counts goodput).
      s.good += (std::isnan(tpot) || within(slo.tpot_ms, tpot)) && within(slo.ttft_ms, ttft) &&
                within(slo.e2e_ms, e2e);
    }
    if (g == groups_.size() - 1) break;
  }
}

void Simulator::writeRequestCsv(const SimRequest& q, Outcome outcome, TimeNs done) {
  const bool routed = q.sent >= 0;
  const TimeNs latency = scenario_.gateways.network_latency;
  std::string ttft, tpot, e2e;
  if (outcome == Outcome::kOk) {
    const double t = static_cast<double>(q.first_token + latency - q.arrival) / kNsPerMsD;
    const double e = static_cast<double>(done - q.arrival) / kNsPerMsD;
    ttft = fmt::format("{:.3f}", t);
    e2e = fmt::format("{:.3f}", e);
    if (q.output_tokens >= 2) tpot = fmt::format("{:.3f}", (e - t) / (q.output_tokens - 1));
  }
  *request_csv_ << fmt::format(
      "{:.6f},{},{},{},{},{},{},{},{},{},{},{}\n", static_cast<double>(q.arrival) / kNsPerSec,
      q.gateway, routed ? fmt::format("{}", q.replica) : std::string(),
      routed ? gpu_types_[replicas_[q.replica].gpu_type] : std::string(),
      scenario_.workload.mix.empty() ? std::string("trace")
                                     : scenario_.workload.mix[q.request_class].name,
      q.prompt_tokens, q.output_tokens, outcomeName(outcome), static_cast<int>(q.attempts), ttft,
      tpot, e2e);
}

void Simulator::onQueueSample() {
  if (added_at_ >= 0 && now_ >= added_at_ && now_ - added_at_ <= 5 * kNsPerSec) {
    for (const SimReplica& r : replicas_) {
      if (r.removed || !r.alive) continue;
      const engine::EngineLoad load = r.model->load();
      const double inflight = load.running + load.waiting;
      if (r.added) {
        result_.added.peak_inflight_5s = std::max(result_.added.peak_inflight_5s, inflight);
      } else {
        established_inflight_.add(inflight);
      }
    }
  }
  const bool in_window = window_open_ && !window_closed_;
  if (!in_window) return;
  for (SimReplica& r : replicas_) {
    if (r.removed || !r.alive) continue;
    catchUp(r);
    const engine::EngineLoad load = r.model->load();
    result_.queue_depth.add(load.waiting);
    for (GroupStats* group : {&groups_[r.gpu_type], &groups_.back()}) {
      group->kv_usage_sum += load.kv_usage;
      ++group->kv_samples;
    }
  }
}

void Simulator::onSecond() {
  const size_t all = groups_.size() - 1;
  std::vector<SecondRow> rows = second_counts_;
  const int64_t second = now_ / kNsPerSec;
  for (size_t g = 0; g < rows.size(); ++g) {
    rows[g].second = second;
    rows[g].group = groups_[g].label;
  }
  for (SimReplica& r : replicas_) {
    if (r.removed && r.inflight == 0) continue;
    catchUp(r);
    const engine::EngineLoad load = r.model->load();
    const double busy = r.busySeconds();
    for (size_t g : {static_cast<size_t>(r.gpu_type), all}) {
      SecondRow& row = rows[g];
      if (!r.removed) ++row.replicas;
      row.busy += busy - r.second_busy;
      row.running += load.running;
      row.waiting += load.waiting;
      row.max_waiting = std::max(row.max_waiting, load.waiting);
      row.kv_usage += load.kv_usage;
    }
    r.second_busy = busy;
  }
  // Gateway-counted requests in flight, and what gateway 0 has learned.
  std::vector<double> learned(groups_.size(), 0);
  std::vector<int> learned_n(groups_.size(), 0);
  // Telemetry freshness, as the gateway's switchyard_telemetry_fresh_ratio: the replicas that
  // answer whose last good signal is at most three scrape intervals old.
  const TimeNs fresh_age = 3 * scenario_.gateways.scrape_interval;
  for (const SimGateway& g : gateways_) {
    if (!g.alive) continue;
    for (size_t p = 0; p < g.fleet_states.size(); ++p) {
      const fleet::ReplicaState& state = *g.fleet_states[p];
      const SimReplica& replica = replicas_[g.replica_at[p]];
      const size_t type = replica.gpu_type;
      if (replica.alive) {
        ++telemetry_checked_;
        telemetry_fresh_ += state.signalsValid() && now_ - state.signalsReadAt() <= fresh_age;
      }
      const double running =
          static_cast<double>(state.counters().running.load(std::memory_order_relaxed));
      rows[type].inflight += running;
      rows[all].inflight += running;
      if (&g != &gateways_.front()) continue;
      const double decode = state.capacity().decode;
      if (decode > 0) {
        learned[type] += decode;
        ++learned_n[type];
        learned[all] += decode;
        ++learned_n[all];
      }
    }
  }
  std::vector<double> capacity(gpu_types_.size(), 0);
  for (size_t g = 0; g < rows.size(); ++g) {
    SecondRow& row = rows[g];
    const int n = std::max(1, row.replicas);
    row.busy /= n;
    row.kv_usage /= n;
    row.ttft_p50_ms = second_ttft_[g].percentile(50);
    row.ttft_p99_ms = second_ttft_[g].percentile(99);
    row.e2e_p99_ms = second_e2e_[g].percentile(99);
    row.learned_capacity = learned_n[g] ? learned[g] / learned_n[g] : NAN;
    if (g < capacity.size()) capacity[g] = row.learned_capacity;
    second_ttft_[g].clear();
    second_e2e_[g].clear();
    second_counts_[g] = SecondRow{};
    result_.seconds.push_back(std::move(row));
  }
  capacity_trace_.push_back(std::move(capacity));
}

RunResult Simulator::collect() {
  RunResult out = std::move(result_);
  out.strategy = options_.label.empty() ? options_.strategy : options_.label;
  out.rate = options_.rate > 0 ? options_.rate : scenario_.workload.arrivals.rate;
  out.simulated = now_;
  out.events = events_;
  out.window = end_ - scenario_.warmup;
  out.telemetry_fresh_ratio =
      telemetry_checked_ > 0
          ? static_cast<double>(telemetry_fresh_) / static_cast<double>(telemetry_checked_)
          : 1.0;
  for (const SimReplica& r : replicas_) out.removed.undrained += r.removed && r.drained_at < 0;
  // What gateway 0 learned about each GPU type, at the end.
  std::vector<double> learned(groups_.size(), 0);
  std::vector<int> learned_n(groups_.size(), 0);
  if (!gateways_.empty()) {
    const SimGateway& g = gateways_.front();
    for (size_t p = 0; p < g.fleet_states.size(); ++p) {
      const double decode = g.fleet_states[p]->capacity().decode;
      if (!(decode > 0)) continue;
      const size_t type = replicas_[g.replica_at[p]].gpu_type;
      for (size_t k : {type, groups_.size() - 1}) {
        learned[k] += decode;
        ++learned_n[k];
      }
    }
  }
  for (size_t k = 0; k < groups_.size(); ++k) {
    groups_[k].learned_capacity = learned_n[k] ? learned[k] / learned_n[k] : NAN;
  }
  for (const SimReplica& r : replicas_) {
    const engine::EngineLoad load = r.model->load();
    out.wasted_requests += load.aborted_requests_total;
    out.wasted_slot_seconds += load.aborted_running_seconds_total;
    out.wasted_tokens += load.aborted_computed_tokens_total;
  }
  for (const SimGateway& g : gateways_) {
    for (const auto& state : g.fleet_states) {
      out.health_exclusions +=
          state->counters().health_exclusions_total.load(std::memory_order_relaxed);
    }
    // Transitions are counted as "state:reason"; an exclusion is "excluded:<reason>".
    constexpr std::string_view kExcluded = "excluded:";
    for (const auto& [transition, count] : g.health->transitions()) {
      if (transition.rfind(kExcluded, 0) != 0) continue;
      out.health_exclusions_by_reason[transition.substr(kExcluded.size())] += count;
    }
  }
  // Capacity convergence: from the start, the first second after which every type's mean
  // learned capacity stays within 10 % of its value at the end of the arrivals.
  const size_t first = 0;
  const auto arrivals_end = std::min(capacity_trace_.size(),
                                     static_cast<size_t>(end_ / kNsPerSec));
  if (arrivals_end > first) {
    const std::vector<double>& last = capacity_trace_[arrivals_end - 1];
    size_t settled = arrivals_end;
    for (size_t s = arrivals_end; s-- > first;) {
      bool ok = true;
      for (size_t t = 0; t < last.size(); ++t) {
        const double v = capacity_trace_[s][t];
        ok &= last[t] > 0 && v > 0 && std::abs(v - last[t]) <= 0.1 * last[t];
      }
      if (!ok) break;
      settled = s;
    }
    if (settled < arrivals_end) out.capacity_convergence_s = static_cast<double>(settled + 1);
  }
  if (added_at_ >= 0) {
    auto ratio = [](int64_t a, int64_t b) { return b ? static_cast<double>(a) / b : 0.0; };
    out.added.share_2s = ratio(routed_added_[0], routed_all_[0]);
    out.added.share_5s = ratio(routed_added_[1], routed_all_[1]);
    out.added.share_10s = ratio(routed_added_[2], routed_all_[2]);
    out.added.established_median_5s = established_inflight_.percentile(50);
  }
  // Cost: each GPU type's replica-hours in the window at its price.
  out.cost_usd = scenario_.prices.empty() ? -1 : 0;
  for (size_t k = 0; k + 1 < groups_.size(); ++k) {
    out.replica_hours.push_back(groups_[k].replica_seconds / 3600);
    const auto* gpu = catalog_.findGpu(groups_[k].label);
    auto price = scenario_.prices.find(gpu ? gpu->name : groups_[k].label);
    if (price == scenario_.prices.end()) price = scenario_.prices.find(groups_[k].label);
    if (price == scenario_.prices.end()) {
      out.cost_usd = -1;
    } else if (out.cost_usd >= 0) {
      out.cost_usd += out.replica_hours.back() * price->second;
    }
  }
  out.groups = std::move(groups_);
  return out;
}

}  // namespace switchyard::sim
