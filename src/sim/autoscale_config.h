// The scenario's `autoscale:` and `prices:` (docs/simulation.md): the optimizer run every
// interval on the load the simulated gateways observed, its answer applied to the fleet (replicas
// added and removed by GPU type), as the optimize service recommends for a live fleet; and the
// price of each GPU type per hour, for the cost of every run.
//
//   prices: ../../data/gpu_prices.yaml     # or inline: {A10: 1.006, L20: 1.861}
//   autoscale:
//     interval_s: 60           # the optimize service's interval
//     window_s: 240            # the load window it plans for (optimizer/load_window.h)
//     slice_factor: 4
//     headroom: 0.1
//     time_limit_ms: 500       # the solver's
//     hysteresis: 0.05
//     scale_down_cooldown_s: 60
//     slo: {tpot_ms: 50}       # the profiles' SLO (default: record.slo's ttft and tpot)
//     deployments:             # GPU types of the fleet the optimizer may scale
//       - {gpu: L20, min_replicas: 1, max_replicas: 40}
//
// Profiles are the engine model's own, swept on a virtual clock at the SLO (`gen-profile
// --emulated`'s sweep, profile/emulated_profile.h). Parsed at load time; errors are ConfigError
// with the line ("autoscale.deployments[0].gpu: required").
#pragma once

#include <map>
#include <string>
#include <vector>

#include "core/clock.h"
#include "optimizer/stability.h"

namespace YAML {
class Node;
}

namespace switchyard::sim {

struct AutoscaleDeployment {
  std::string gpu;
  int min_replicas = 0;
  int max_replicas = -1;  // -1: unbounded
  int line = 0;
};

struct AutoscaleSpec {
  bool given = false;
  TimeNs interval = 60 * kNsPerSec;
  int64_t window_s = 240;
  int slice_factor = 4;
  double headroom = 0;
  TimeNs time_limit = 500 * kNsPerMs;
  optimizer::StabilitySettings stability;
  double slo_ttft_ms = -1;  // -1: record.slo's
  double slo_tpot_ms = -1;
  std::vector<AutoscaleDeployment> deployments;
};

void parseAutoscale(const YAML::Node& node, AutoscaleSpec& spec);
// `prices:`: a mapping of GPU type to US dollars per GPU-hour, or the path of a file in
// data/gpu_prices.yaml's layout (relative to `base_dir`).
std::map<std::string, double> parsePrices(const YAML::Node& node, const std::string& base_dir);

}  // namespace switchyard::sim
