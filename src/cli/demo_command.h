// `switchyard demo`: the heterogeneous-fleet benchmark, short by default (`make demo`), long from
// bench/e2e/hetero.sh. It
//   1. measures each GPU type's capacity: one replica of the type alone, saturated by a closed
//      loop of `capacity_concurrency` clients with the request mix, output tokens/s read from the
//      engine's own counters over `capacity_seconds`;
//   2. for every offered load (a fraction of the measured fleet capacity) and every strategy,
//      starts a fresh emulated fleet (one engine process hosting every replica) and a fresh
//      gateway, so no strategy inherits another's learned capacity or engine state, offers the
//      same seeded open-loop Poisson arrivals with the same mix, and measures over
//      [warmup, warmup + seconds): latency per request from the load generator, busy fraction and
//      tokens/s per replica from the engines' /metrics;
//   3. prints one table per load (rows: strategy × GPU type) and optionally writes it as CSV.
// Strategies named slo* run with the model's SLO (tpot = slo_tpot_ms, ttft = slo_ttft_ms when
// set) and emulated profiles of each GPU type; `oracle` pins each request class to a GPU type.
// Every child process listens on an OS-chosen loopback port and is stopped before returning.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace switchyard::cli {

struct DemoOptions {
  std::vector<std::string> gpus = {"L20", "L20", "A100", "A100"};
  std::vector<std::string> strategies = {"random", "round-robin", "least-request", "load-balance",
                                         "load-balance-shape-aware"};
  std::string model = "llama2-7b";
  std::vector<double> loads = {0.7};  // offered load, fraction of the measured fleet capacity
  double rate = 0;                    // requests/s; > 0 replaces `loads`
  double warmup_seconds = 3;          // load before measuring: the gateway learns capacity
  double seconds = 10;                // measured window per strategy and load
  double capacity_seconds = 8;
  int capacity_concurrency = 64;
  std::string mix;  // "name:weight:pmin-pmax:omin-omax,…"; empty: loadgen::defaultMix()
  double slo_tpot_ms = 50;
  double slo_ttft_ms = 0;  // 0: not checked
  uint64_t seed = 7;
  std::string csv_path;  // empty: no CSV
  // The fixed assignment the strategy `oracle` runs: "class:GPU,…" (each request class of the mix
  // pinned to a GPU type with x-switchyard-gpu, least-request within it).
  std::string oracle;
  // Prices per replica-hour for the slo strategies' cost preference: "GPU:price,…" (empty: the
  // emulated profiles' cost of 1 each).
  std::string gpu_costs;
  // Profile files for the slo strategies instead of emulated ones: "GPU:FILE,…" (a type not named
  // keeps its emulated profile). The optimizer's benchmark runs its answer on the very profiles
  // it was computed from.
  std::string slo_profiles;
};

// 0 when the runs completed and every measured request succeeded, 1 otherwise.
int runDemo(const DemoOptions& options);

}  // namespace switchyard::cli
