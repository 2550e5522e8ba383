#include "sim/report.h"

#include <fmt/format.h>

#include <cctype>
#include <algorithm>
#include <cmath>

namespace switchyard::sim {
namespace {

std::string ms(double v) { return std::isnan(v) ? "-" : fmt::format("{:.0f}", v); }
std::string ms1(double v) { return std::isnan(v) ? "-" : fmt::format("{:.1f}", v); }

// JSON numbers: NaN and Inf have no JSON form; null stands for "no value".
std::string num(double v, int decimals = 3) {
  return std::isfinite(v) ? fmt::format("{:.{}f}", v, decimals) : std::string("null");
}

std::string jsonString(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      out += fmt::format("\\u{:04x}", c);
    } else {
      out += c;
    }
  }
  return out + "\"";
}

// " (load_outlier 12, request_failures 3)" after the exclusions count; empty without any.
std::string exclusionReasons(const RunResult& run) {
  std::string out;
  for (const auto& [reason, count] : run.health_exclusions_by_reason) {
    out += fmt::format("{}{} {}", out.empty() ? " (" : ", ", reason, count);
  }
  return out.empty() ? out : out + ")";
}

int64_t refusals(const GroupStats& g) {
  int64_t n = 0;
  for (size_t k = 0; k < g.outcomes.size(); ++k) {
    if (isRefusal(static_cast<Outcome>(k))) n += g.outcomes[k];
  }
  return n;
}

int64_t failures(const GroupStats& g) { return g.requests - g.ok() - refusals(g); }

double share(const GroupStats& g, const GroupStats& all) {
  return all.requests ? static_cast<double>(g.requests) / static_cast<double>(all.requests) : 0;
}

double windowSeconds(const RunResult& run) { return static_cast<double>(run.window) / 1e9; }

// Throughput utilisation of a GPU type: the tokens/s its replicas served over what they sustain
// saturated (the capacity probe), NaN when the capacity is not known.
double throughputUtil(const RunSet& set, const RunResult& run, const GroupStats& g) {
  for (const TypeCapacity& t : set.capacities) {
    if (t.gpu != g.label || !(t.tokens_per_s > 0) || !(g.replica_seconds > 0)) continue;
    return g.generated_tokens / (t.tokens_per_s * g.replica_seconds);
  }
  (void)run;
  return NAN;
}

// The largest difference between GPU types of `value` (NaN with fewer than two known).
template <typename Value>
double gapBetweenTypes(const RunResult& run, Value value) {
  double lo = INFINITY, hi = -INFINITY;
  int known = 0;
  for (size_t k = 0; k + 1 < run.groups.size(); ++k) {
    const double v = value(run.groups[k]);
    if (std::isnan(v)) continue;
    lo = std::min(lo, v);
    hi = std::max(hi, v);
    ++known;
  }
  return known >= 2 ? hi - lo : NAN;
}

// "TPOT <= 50 ms, E2E <= 30000 ms": the limits that are checked ("none").
std::string sloText(const Slo& slo) {
  std::string out;
  for (const auto& [name, limit] : {std::pair{"TPOT", slo.tpot_ms}, std::pair{"TTFT", slo.ttft_ms},
                                    std::pair{"E2E", slo.e2e_ms}}) {
    if (limit > 0) out += fmt::format("{}{} <= {} ms", out.empty() ? "" : ", ", name, limit);
  }
  return out.empty() ? "none" : out;
}

}  // namespace

std::string fileStem(const std::string& strategy) {
  std::string out;
  for (char c : strategy) {
    out += (std::isalnum(static_cast<unsigned char>(c)) || c == '-') ? c : '_';
  }
  return out;
}

std::string formatSummary(const RunSet& set) {
  const Scenario& s = *set.scenario;
  std::string out = fmt::format(
      "scenario {} (seed {}): {} replicas, {} gateway(s){}, {:.0f} s of arrivals, measured from "
      "{:.0f} s; SLO: {}\n",
      s.name, s.seed, s.replicaCount(), s.gateways.count,
      s.gateways.shared_state
          ? fmt::format(" sharing state every {} ms (+{} ms)", s.gateways.sync_interval / kNsPerMs,
                        s.gateways.sync_delay / kNsPerMs)
          : "",
      static_cast<double>(s.duration) / 1e9, static_cast<double>(s.warmup) / 1e9,
      sloText(s.record.slo));
  if (!set.capacities.empty()) {
    out += "capacity (each GPU type alone, saturated by the mix):";
    for (const TypeCapacity& t : set.capacities) {
      out += fmt::format(" {} {:.0f} tok/s;", t.gpu, t.tokens_per_s);
    }
    out +=
        fmt::format(" offered load {:.0f} % = {:.2f} requests/s\n", 100 * s.workload.arrivals.load,
                    set.runs.empty() ? 0.0 : set.runs.front().rate);
  }
  out += fmt::format(
      "\n{:<26} {:<9} {:>8} {:>6} {:>6} {:>6} {:>6} {:>11} {:>11} {:>11} {:>7} {:>8} "
      "{:>7} {:>7}\n",
      "strategy", "gpu", "requests", "share", "busy", "tput", "kv", "TTFT p50/99",
      "TPOT p50/99", "E2E p50/99", "good%", "refused", "failed", "tok/s");
  for (const RunResult& run : set.runs) {
    const GroupStats& all = run.groups.back();
    for (const GroupStats& g : run.groups) {
      const double tput = throughputUtil(set, run, g);
      out += fmt::format(
          "{:<26} {:<9} {:>8} {:>5.1f}% {:>5.0f}% {:>6} {:>5.0f}% {:>11} {:>11} {:>11} {:>6.1f}% "
          "{:>8} {:>7} {:>7.0f}\n",
          run.strategy, g.label, g.requests, 100 * share(g, all), 100 * g.busy(),
          std::isnan(tput) ? std::string("-") : fmt::format("{:.0f}%", 100 * tput),
          g.kv_samples ? 100 * g.kv_usage_sum / static_cast<double>(g.kv_samples) : 0.0,
          ms(g.ttft_ms.percentile(50)) + "/" + ms(g.ttft_ms.percentile(99)),
          ms1(g.tpot_ms.percentile(50)) + "/" + ms1(g.tpot_ms.percentile(99)),
          ms(g.e2e_ms.percentile(50)) + "/" + ms(g.e2e_ms.percentile(99)), 100 * g.goodput(),
          refusals(g), failures(g), g.generated_tokens / std::max(1e-9, windowSeconds(run)));
    }
  }
  out +=
      "\nshare = measured requests served by the type; busy = engine busy fraction; tput = "
      "tokens/s served / the type's capacity (the probe's, at its closed-loop clients); kv = "
      "mean KV-cache usage; latencies in ms (client side); good% = ok within the SLO; refused = "
      "429s; failed = 5xx, cut streams, deadlines, unfinished\n";
  out += "\nper strategy:\n";
  for (const RunResult& run : set.runs) {
    const double sim_s = static_cast<double>(run.simulated) / 1e9;
    out += fmt::format(
        "  {:<26} {} events, {:.0f} simulated s{}; queue depth p99 {} max {}; health exclusions "
        "{}{}{}{}{}{}{}\n",
        run.strategy, run.events, sim_s,
        run.wall_seconds > 0 ? fmt::format(" in {:.1f} wall s, {:.1f} CPU s ({:.1f}x real time)",
                                           run.wall_seconds, run.cpu_seconds,
                                           sim_s / run.wall_seconds)
                             : "",
        ms(run.queue_depth.percentile(99)),
        ms(run.queue_depth.max()), run.health_exclusions, exclusionReasons(run),
        run.capacity_convergence_s >= 0
            ? fmt::format("; capacity learned within 10 % after {:.0f} s",
                          run.capacity_convergence_s)
            : "",
        run.groups.size() > 2
            ? fmt::format("; gap between types: busy {:.1f} pp, tput {} pp",
                          100 * gapBetweenTypes(run, [](const GroupStats& g) { return g.busy(); }),
                          ms1(100 * gapBetweenTypes(run, [&](const GroupStats& g) {
                                return throughputUtil(set, run, g);
                              })))
            : "",
        set.timed_routing && run.routing_ns.count() > 0
            ? fmt::format("; routing {:.2f} us/decision (p99 {:.2f})", run.routing_ns.mean() / 1e3,
                          run.routing_ns.percentile(99) / 1e3)
            : "",
        run.shared_admission_calls > 0
            ? fmt::format("; {} shared-state admission calls", run.shared_admission_calls)
            : "",
        run.shared_state_degraded > 0
            ? fmt::format("; {} shared-state calls degraded", run.shared_state_degraded)
            : "");
    const GroupStats& all = run.groups.back();
    std::string refused_by_code;
    for (size_t k = 0; k < all.outcomes.size(); ++k) {
      if (isRefusal(static_cast<Outcome>(k)) && all.outcomes[k] > 0) {
        refused_by_code += fmt::format(" {}={}", outcomeName(static_cast<Outcome>(k)),
                                       all.outcomes[k]);
        if (static_cast<Outcome>(k) == Outcome::kQueueFull && run.queue_full_client > 0) {
          refused_by_code += fmt::format(" (client's share full: {})", run.queue_full_client);
        }
      }
    }
    if (!refused_by_code.empty() || run.gateway_queue_max > 0 || run.wasted_tokens > 0) {
      out += fmt::format(
          "  {:<26} refused:{}; gateway queue max {}; work for clients that gave up: {:.0f} "
          "slot-s, {} tokens\n",
          "", refused_by_code.empty() ? " none" : refused_by_code, run.gateway_queue_max,
          run.wasted_slot_seconds, run.wasted_tokens);
    }
    if (run.cost_usd >= 0) {
      out += fmt::format("  {:<26} cost ${:.2f} for {:.2f} replica-hours{}\n", "", run.cost_usd,
                         all.replica_seconds / 3600,
                         run.autoscale.empty()
                             ? ""
                             : fmt::format(" (autoscaled: {} intervals)", run.autoscale.size()));
    }
    if (run.added.at_s >= 0) {
      const AddedReplicas& a = run.added;
      out += fmt::format(
          "  {:<26} {} replicas added at {:.0f} s (fair share {:.1f} %): share of the requests "
          "routed in the first 2/5/10 s {:.1f}/{:.1f}/{:.1f} %; peak engine in-flight of a new "
          "replica in 5 s {:.0f} vs established median {:.1f}\n",
          "", a.count, a.at_s, 100 * a.fairShare(), 100 * a.share_2s, 100 * a.share_5s,
          100 * a.share_10s, a.peak_inflight_5s, a.established_median_5s);
    }
    if (run.removed.victims > 0) {
      const RemovedReplicas& r = run.removed;
      out += fmt::format(
          "  {:<26} {} replicas removed: {} requests in flight on them when chosen, {} session "
          "requests in the window; killed: {} cut mid-stream, {} before the first token; "
          "drained: {} in p50/max {}/{} s, {} still serving at the end\n",
          "", r.victims, r.in_flight_at_decision, r.session_requests, r.cut_mid_stream,
          r.cut_before_first_token, r.drain_s.count(), num(r.drain_s.percentile(50), 1),
          num(r.drain_s.percentile(100), 1), r.undrained);
    }
  }
  return out;
}

std::string formatSummaryJson(const RunSet& set) {
  double simulated = 0;
  uint64_t events = 0;
  for (const RunResult& run : set.runs) {
    simulated += static_cast<double>(run.simulated) / 1e9;
    events += run.events;
  }
  const Scenario& s = *set.scenario;
  std::string out = "{\n";
  out += fmt::format(
      "  \"scenario\": {},\n  \"seed\": {},\n  \"replicas\": {},\n"
      "  \"gateways\": {},\n",
      jsonString(s.name), s.seed, s.replicaCount(), s.gateways.count);
  out += fmt::format("  \"simulated_seconds\": {},\n  \"wall_seconds\": {},\n  \"events\": {},\n",
                     num(simulated), num(set.wall_seconds), events);
  out += fmt::format("  \"speed\": {},\n",
                     num(set.wall_seconds > 0 ? simulated / set.wall_seconds : 0, 2));
  out += fmt::format("  \"peak_memory_mb\": {},\n", num(set.peak_memory_mb, 1));
  if (!set.capacities.empty()) {
    out += "  \"capacity_tokens_per_s\": {";
    for (size_t i = 0; i < set.capacities.size(); ++i) {
      out += fmt::format("{}{}: {}", i ? ", " : "", jsonString(set.capacities[i].gpu),
                         num(set.capacities[i].tokens_per_s, 1));
    }
    out += "},\n";
  }
  out += "  \"strategies\": {\n";
  for (size_t i = 0; i < set.runs.size(); ++i) {
    const RunResult& run = set.runs[i];
    const GroupStats& all = run.groups.back();
    out += fmt::format("    {}: {{\n", jsonString(run.strategy));
    out += fmt::format("      \"rate\": {},\n", num(run.rate));
    out += fmt::format("      \"simulated_seconds\": {},\n      \"events\": {},\n",
                       num(static_cast<double>(run.simulated) / 1e9), run.events);
    // One line: the figures of the machine, not of the simulation (they differ run to run).
    out += fmt::format("      \"wall_seconds\": {}, \"cpu_seconds\": {},\n", num(run.wall_seconds),
                       num(run.cpu_seconds));
    out += fmt::format("      \"scrapes\": {},\n      \"telemetry_fresh_ratio\": {},\n",
                       run.scrapes, num(run.telemetry_fresh_ratio, 4));
    out += fmt::format(
        "      \"requests\": {},\n      \"ok\": {},\n      \"refused\": {},\n"
        "      \"failed\": {},\n",
        all.requests, all.ok(), refusals(all), failures(all));
    out += "      \"outcomes\": {";
    for (size_t k = 0; k < all.outcomes.size(); ++k) {
      out += fmt::format("{}\"{}\": {}", k ? ", " : "", outcomeName(static_cast<Outcome>(k)),
                         all.outcomes[k]);
    }
    out += fmt::format(
        "}},\n      \"gateway_queue_max\": {},\n      \"queue_full_client\": {},\n"
        "      \"shared_admission_calls\": {},\n      \"wasted_requests\": {},\n"
        "      \"wasted_slot_seconds\": {},\n      \"wasted_tokens\": {},\n",
        run.gateway_queue_max, run.queue_full_client, run.shared_admission_calls,
        run.wasted_requests, num(run.wasted_slot_seconds, 1), run.wasted_tokens);
    out += fmt::format("      \"goodput\": {},\n", num(all.goodput(), 4));
    out += fmt::format("      \"cost_usd\": {},\n      \"replica_hours\": {},\n",
                       run.cost_usd >= 0 ? num(run.cost_usd, 2) : "null",
                       num(all.replica_seconds / 3600, 2));
    if (!run.autoscale.empty()) {
      double peak = 0, low = 1e300;
      int kept = 0;
      for (const AutoscaleStep& step : run.autoscale) {
        peak = std::max(peak, step.usd_per_hour);
        low = std::min(low, step.usd_per_hour);
        kept += step.kept;
      }
      out += fmt::format(
          "      \"autoscale\": {{\"intervals\": {}, \"kept\": {}, \"usd_per_hour_min\": {}, "
          "\"usd_per_hour_max\": {}}},\n",
          run.autoscale.size(), kept, num(low, 2), num(peak, 2));
    }
    out += fmt::format("      \"output_tokens\": {},\n", all.output_tokens);
    for (const auto& [name, d] : {std::pair{"ttft", &all.ttft_ms}, std::pair{"tpot", &all.tpot_ms},
                                  std::pair{"e2e", &all.e2e_ms}}) {
      out += fmt::format("      \"{0}_p50_ms\": {1},\n      \"{0}_p99_ms\": {2},\n", name,
                         num(d->percentile(50)), num(d->percentile(99)));
    }
    out += fmt::format("      \"queue_depth_p99\": {},\n      \"queue_depth_max\": {},\n",
                       num(run.queue_depth.percentile(99), 1), num(run.queue_depth.max(), 1));
    out += fmt::format("      \"routing_us_per_decision\": {},\n",
                       set.timed_routing ? num(run.routing_ns.mean() / 1e3) : "null");
    out += fmt::format("      \"health_exclusions\": {},\n", run.health_exclusions);
    std::string reasons;
    for (const auto& [reason, count] : run.health_exclusions_by_reason) {
      reasons += fmt::format("{}{}: {}", reasons.empty() ? "" : ", ", jsonString(reason), count);
    }
    out += fmt::format("      \"health_exclusions_by_reason\": {{{}}},\n", reasons);
    out +=
        fmt::format("      \"capacity_convergence_s\": {},\n",
                    run.capacity_convergence_s >= 0 ? num(run.capacity_convergence_s, 0) : "null");
    if (run.added.at_s >= 0) {
      const AddedReplicas& a = run.added;
      out += fmt::format(
          "      \"added_replicas\": {{\"at_s\": {}, \"count\": {}, \"fair_share\": {}, "
          "\"share_2s\": {}, \"share_5s\": {}, \"share_10s\": {}, \"peak_inflight_5s\": {}, "
          "\"established_median_inflight_5s\": {}}},\n",
          num(a.at_s, 1), a.count, num(a.fairShare(), 4), num(a.share_2s, 4), num(a.share_5s, 4),
          num(a.share_10s, 4), num(a.peak_inflight_5s, 0), num(a.established_median_5s, 1));
    }
    if (run.removed.victims > 0) {
      const RemovedReplicas& r = run.removed;
      out += fmt::format(
          "      \"removed_replicas\": {{\"victims\": {}, \"in_flight_at_decision\": {}, "
          "\"session_requests\": {}, \"cut_mid_stream\": {}, \"cut_before_first_token\": {}, "
          "\"drained\": {}, \"drain_s_p50\": {}, \"drain_s_max\": {}, \"undrained\": {}}},\n",
          r.victims, r.in_flight_at_decision, r.session_requests, r.cut_mid_stream,
          r.cut_before_first_token, r.drain_s.count(), num(r.drain_s.percentile(50), 2),
          num(r.drain_s.percentile(100), 2), r.undrained);
    }
    out += "      \"share_by_gpu\": {";
    for (size_t k = 0; k + 1 < run.groups.size(); ++k) {
      out += fmt::format("{}{}: {}", k ? ", " : "", jsonString(run.groups[k].label),
                         num(share(run.groups[k], all), 4));
    }
    out += "},\n      \"busy_by_gpu\": {";
    for (size_t k = 0; k + 1 < run.groups.size(); ++k) {
      out += fmt::format("{}{}: {}", k ? ", " : "", jsonString(run.groups[k].label),
                         num(run.groups[k].busy(), 4));
    }
    out += "},\n      \"throughput_util_by_gpu\": {";
    for (size_t k = 0; k + 1 < run.groups.size(); ++k) {
      out += fmt::format("{}{}: {}", k ? ", " : "", jsonString(run.groups[k].label),
                         num(throughputUtil(set, run, run.groups[k]), 4));
    }
    out += fmt::format("}},\n      \"busy_gap\": {},\n      \"throughput_util_gap\": {},\n",
                       num(gapBetweenTypes(run, [](const GroupStats& g) { return g.busy(); }), 4),
                       num(gapBetweenTypes(run, [&](const GroupStats& g) {
                             return throughputUtil(set, run, g);
                           }), 4));
    out += "      \"by_gpu\": {";
    for (size_t k = 0; k + 1 < run.groups.size(); ++k) {
      const GroupStats& g = run.groups[k];
      out += fmt::format(
          "{}\n        {}: {{\"requests\": {}, \"ok\": {}, \"goodput\": {}, \"ttft_p50_ms\": {}, "
          "\"ttft_p99_ms\": {}, \"tpot_p50_ms\": {}, \"tpot_p99_ms\": {}, \"e2e_p50_ms\": {}, "
          "\"e2e_p99_ms\": {}, \"busy\": {}, \"tokens_per_s\": {}, \"learned_capacity\": {}}}",
          k ? "," : "", jsonString(g.label), g.requests, g.ok(), num(g.goodput(), 4),
          num(g.ttft_ms.percentile(50)), num(g.ttft_ms.percentile(99)),
          num(g.tpot_ms.percentile(50)), num(g.tpot_ms.percentile(99)),
          num(g.e2e_ms.percentile(50)), num(g.e2e_ms.percentile(99)), num(g.busy(), 4),
          num(g.generated_tokens / std::max(1e-9, windowSeconds(run)), 1),
          num(g.learned_capacity, 1));
    }
    out += "\n      }\n";
    out += fmt::format("    }}{}\n", i + 1 < set.runs.size() ? "," : "");
  }
  out += "  }\n}\n";
  return out;
}

std::string formatSummaryCsv(const RunSet& set) {
  std::string out =
      "strategy,gpu,requests,ok,refused,failed,share,busy,goodput,ttft_p50_ms,ttft_p99_ms,"
      "tpot_p50_ms,tpot_p99_ms,e2e_p50_ms,e2e_p99_ms,tokens_per_s,learned_capacity\n";
  for (const RunResult& run : set.runs) {
    const GroupStats& all = run.groups.back();
    for (const GroupStats& g : run.groups) {
      out += fmt::format(
          "{},{},{},{},{},{},{:.4f},{:.4f},{:.4f},{},{},{},{},{},{},{:.1f},{}\n", run.strategy,
          g.label, g.requests, g.ok(), refusals(g), failures(g), share(g, all), g.busy(),
          g.goodput(), num(g.ttft_ms.percentile(50)), num(g.ttft_ms.percentile(99)),
          num(g.tpot_ms.percentile(50)), num(g.tpot_ms.percentile(99)),
          num(g.e2e_ms.percentile(50)), num(g.e2e_ms.percentile(99)),
          g.generated_tokens / std::max(1e-9, windowSeconds(run)), num(g.learned_capacity, 1));
    }
  }
  return out;
}

std::string formatSecondsCsv(const RunResult& run) {
  std::string out =
      "second,group,replicas,arrivals,completed,refused,failed,output_tokens,busy,running,"
      "waiting,max_waiting,kv_usage,inflight,ttft_p50_ms,ttft_p99_ms,e2e_p99_ms,"
      "learned_capacity\n";
  for (const SecondRow& r : run.seconds) {
    out += fmt::format(
        "{},{},{},{},{},{},{},{},{:.4f},{:.0f},{:.0f},{},{:.4f},{:.0f},{},{},{},{}\n", r.second,
        r.group, r.replicas, r.arrivals, r.completed, r.refused, r.failed, r.output_tokens, r.busy,
        r.running, r.waiting, r.max_waiting, r.kv_usage, r.inflight, num(r.ttft_p50_ms, 1),
        num(r.ttft_p99_ms, 1), num(r.e2e_p99_ms, 1), num(r.learned_capacity, 1));
  }
  return out;
}

std::string formatAutoscaleCsv(const RunResult& run) {
  std::string out = "second,planned_rps";
  for (const std::string& gpu : run.autoscale_deployments) out += ",replicas_" + gpu;
  out += ",usd_per_hour,kept,feasible,solve_ms\n";
  for (const AutoscaleStep& step : run.autoscale) {
    out += fmt::format("{:.0f},{:.3f}", step.at_s, step.planned_rps);
    for (const int n : step.replicas) out += fmt::format(",{}", n);
    out += fmt::format(",{:.3f},{},{},{:.1f}\n", step.usd_per_hour, step.kept ? 1 : 0,
                       step.feasible ? 1 : 0, step.solve_ms);
  }
  return out;
}

std::string formatPlotScript(const RunSet& set, const std::string& dir) {
  // One PNG per figure, every strategy on it; per-GPU figures draw one line per strategy x type.
  // Each line picks its group's rows out of the CSV and maps the others to NaN: NaN must count as
  // missing (skipped) rather than undefined, which would break the line at every other row and
  // draw nothing. A `null` field (no value) is not a number, so its point is skipped too.
  std::string out = fmt::format(
      "set terminal pngcairo size 1000,560 noenhanced\nset datafile separator ','\n"
      "set key outside right\nset grid\nset xlabel 'simulated time (s)'\n"
      "set datafile missing NaN\n");
  auto plot = [&](const std::string& file, const std::string& title, const std::string& ylabel,
                  const std::string& column, bool by_gpu, bool log_y = false) {
    out += fmt::format("set output '{}/{}'\nset title '{} ({})'\nset ylabel '{}'\n{}", dir, file,
                       title, set.scenario->name, ylabel,
                       log_y ? "set logscale y\n" : "unset logscale y\n");
    std::string lines;
    for (const RunResult& run : set.runs) {
      const std::string csv = fmt::format("{}/{}-seconds.csv", dir, fileStem(run.strategy));
      if (!by_gpu) {
        lines += fmt::format(
            "{}'{}' using 1:(strcol(2) eq 'all' ? ${} : NaN) with lines "
            "title '{}'",
            lines.empty() ? "plot " : ", \\\n     ", csv, column, run.strategy);
        continue;
      }
      for (size_t k = 0; k + 1 < run.groups.size(); ++k) {
        lines += fmt::format(
            "{}'{}' using 1:(strcol(2) eq '{}' ? ${} : NaN) with lines "
            "title '{} {}'",
            lines.empty() ? "plot " : ", \\\n     ", csv, run.groups[k].label, column, run.strategy,
            run.groups[k].label);
      }
    }
    out += lines + "\n";
  };
  plot("completed.png", "completed requests per second", "requests/s", "5", false);
  plot("ttft_p99.png", "p99 time to first token of the requests completed each second", "ms", "16",
       false, true);
  plot("e2e_p99.png", "p99 end-to-end latency of the requests completed each second", "ms", "17",
       false, true);
  plot("busy_by_gpu.png", "engine busy fraction per GPU type", "busy fraction", "9", true);
  plot("waiting.png", "engine queue: waiting requests, the longest queue", "requests", "12", false);
  plot("replicas.png", "replicas in the fleet", "replicas", "3", false);
  plot("refused.png", "requests refused per second", "requests/s", "6", false);
  plot("learned_capacity.png", "capacity learned by gateway 0, mean per GPU type", "tokens/s", "18",
       true);
  return out;
}

}  // namespace switchyard::sim
