// `switchyard simulate --scenario FILE.yaml [-o DIR] [--summary-json FILE]`: runs a scenario
// (src/sim/scenario.h) once per strategy it lists, on the same arrivals, and prints the summary
// table; with -o, writes the summary (text, CSV, JSON), the per-second CSV series per strategy,
// optionally the per-request CSV, and PNG plots (gnuplot, when installed). A progress bar with
// the simulated-time speed goes to stderr.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace switchyard::cli {

struct SimulateOptions {
  std::string scenario_path;
  std::string out_dir;                  // "" : no files but --summary-json
  std::string summary_json;             // "" : none
  std::vector<std::string> strategies;  // replaces the scenario's list when given
  double scale = 1;       // multiplies every fleet count, replica event and open-loop rate
  double duration_s = 0;  // > 0: replaces the scenario's duration_s
  double rate = 0;        // > 0: the open-loop rate in requests/s (replaces rate or load)
  uint64_t seed = 0;      // > 0: replaces the scenario's seed
  bool progress = true;
  bool time_routing = true;  // measure the CPU time of each routing decision
};

// 0 on success; 2 for a scenario that cannot be used (the error names FILE:LINE: key).
int runSimulate(const SimulateOptions& options);

}  // namespace switchyard::cli
