// What `switchyard simulate` writes: the summary table (per strategy, per GPU type and overall:
// share, utilisation, TTFT/TPOT/E2E percentiles, goodput, refusals), the summary JSON for
// scripts, per-second CSV series, and gnuplot scripts for the PNG plots. Pure formatting (files
// are written by the caller's paths); no simulation state.
#pragma once

#include <string>
#include <vector>

#include "sim/capacity.h"
#include "sim/scenario.h"
#include "sim/simulator.h"

namespace switchyard::sim {

struct RunSet {
  const Scenario* scenario = nullptr;
  std::vector<TypeCapacity> capacities;  // empty unless the workload is a `load:`
  std::vector<RunResult> runs;           // one per strategy, scenario order
  double wall_seconds = 0;
  double peak_memory_mb = 0;  // the process's peak resident set (0: not measured)
  bool timed_routing = false;  // routing CPU per decision was measured
};

std::string formatSummary(const RunSet& set);
// The JSON contract: simulated_seconds, wall_seconds, events, and per strategy (an object keyed
// by strategy name) requests, goodput (fraction of the measured requests that succeeded within
// the SLO), ttft_p99_ms, e2e_p99_ms and share_by_gpu (fraction of the measured requests each GPU
// type served), plus more figures.
std::string formatSummaryJson(const RunSet& set);
// One row per strategy and group.
std::string formatSummaryCsv(const RunSet& set);
std::string formatSecondsCsv(const RunResult& run);
// One row per autoscaling interval: time, planned load, replicas per GPU type, $/hour, whether
// hysteresis kept the answer in force, whether it was feasible, the solve's time.
std::string formatAutoscaleCsv(const RunResult& run);
// A gnuplot script drawing PNGs in `dir` from the per-second CSVs of every strategy
// (<dir>/<strategy>-seconds.csv).
std::string formatPlotScript(const RunSet& set, const std::string& dir);
// A file-name-safe form of a strategy ("load-balance:2,random:1" -> "load-balance_2_random_1").
std::string fileStem(const std::string& strategy);

}  // namespace switchyard::sim
