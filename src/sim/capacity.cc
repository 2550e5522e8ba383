#include "sim/capacity.h"

#include <algorithm>

#include "engine/perf_profiles.h"
#include "sim/simulator.h"
#include "sim/workload.h"

namespace switchyard::sim {

std::vector<TypeCapacity> measureCapacities(const Scenario& scenario) {
  const engine::ProfileCatalog catalog = scenario.profiles_path.empty()
                                             ? engine::builtinProfiles()
                                             : engine::loadProfilesFile(scenario.profiles_path);
  std::vector<TypeCapacity> out;
  for (const FleetGroup& group : scenario.fleet) {
    const engine::GpuSpec* gpu = catalog.findGpu(group.gpu);
    auto known = std::find_if(out.begin(), out.end(),
                              [&](const TypeCapacity& t) { return catalog.findGpu(t.gpu) == gpu; });
    if (known != out.end()) {
      known->replicas += group.count;
      continue;
    }
    constexpr double kRampSeconds = 2;
    constexpr double kMeasureFrom = 3;
    Scenario probe = scenario;
    probe.name = scenario.name + "-capacity-" + group.gpu;
    probe.fleet = {group};
    probe.fleet[0].count = 1;
    probe.gateways.count = 1;
    probe.gateways.shared_state = false;
    probe.events.clear();
    probe.workload.bursts.clear();
    probe.workload.sessions = 0;
    probe.workload.arrivals = ArrivalSpec{};
    probe.workload.arrivals.kind = ArrivalSpec::Kind::kClosedLoop;
    probe.workload.arrivals.clients = scenario.capacity_clients;
    probe.workload.arrivals.ramp = static_cast<TimeNs>(kRampSeconds * kNsPerSec);
    for (RequestClass& c : probe.workload.mix) c.deadline = 0;
    probe.warmup = static_cast<TimeNs>(kMeasureFrom * kNsPerSec);
    probe.duration = static_cast<TimeNs>((kMeasureFrom + scenario.capacity_seconds) * kNsPerSec);
    probe.drain = 0;
    probe.strategies = {StrategyRun{"least-request", "least-request", probe.gateways}};
    RunOptions options;
    options.strategy = "least-request";
    const RunResult result = runSimulation(probe, options);
    const GroupStats& all = result.groups.back();
    TypeCapacity t;
    t.gpu = group.gpu;
    t.tokens_per_s = all.generated_tokens / scenario.capacity_seconds;
    t.busy = all.busy();
    t.replicas = group.count;
    out.push_back(t);
  }
  return out;
}

double rateForLoad(const Scenario& scenario, const std::vector<TypeCapacity>& capacities,
                   double load) {
  double fleet = 0;
  for (const TypeCapacity& t : capacities) fleet += t.tokens_per_s * t.replicas;
  return load * fleet / Workload::meanOutputTokens(scenario.workload);
}

}  // namespace switchyard::sim
