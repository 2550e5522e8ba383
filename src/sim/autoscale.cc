// Fleet changes by GPU type (scenario events and autoscaling) and autoscaling itself: every
// `autoscale.interval` the load the gateways saw (arrivals by request shape, as the gateway's
// load monitor counts them) closes into an interval, the optimizer plans for the window of
// intervals (optimizer::planLoad), solves with the stabilizer's floors and hysteresis
// (optimizer::decideInterval, as the optimize service does) on profiles of the engine model, and
// its answer is applied: replicas added, or removed as `scale_down:` says (scale_down.cc), per
// GPU type. New replicas serve at once (no start-up delay is simulated).
#include <fmt/format.h>

#include <algorithm>

#include "observe/load_shape.h"
#include "optimizer/interval_decision.h"
#include "optimizer/load_window.h"
#include "profile/emulated_profile.h"
#include "sim/simulator_impl.h"

namespace switchyard::sim {

void Simulator::addReplicas(const std::string& gpu, int count) {
  size_t group = 0;
  for (size_t i = 0; i < scenario_.fleet.size(); ++i) {
    if (catalog_.findGpu(scenario_.fleet[i].gpu) == catalog_.findGpu(gpu)) {
      group = i;
      break;
    }
  }
  for (int i = 0; i < count; ++i) addReplica(group, now_, /*starting=*/true);
  // Starting replicas join the gateways' fleet when their start-up is over.
  if (const TimeNs startup = scenario_.fleet[group].startup; startup > 0 && count > 0) {
    queue_.push(now_ + startup, kReplicasReady);
  }
  for (SimGateway& g : gateways_) g.states.resize(replicas_.size());
}

int Simulator::activeReplicas(const std::string& gpu) const {
  const auto* type = catalog_.findGpu(gpu);
  return static_cast<int>(std::count_if(replicas_.begin(), replicas_.end(), [&](const auto& r) {
    return !r.removed && catalog_.findGpu(gpu_types_[r.gpu_type]) == type;
  }));
}

void Simulator::startAutoscale() {
  const AutoscaleSpec& spec = scenario_.autoscale;
  autoscaling_ =
      spec.given && scenario_.strategies.size() == 1 && scenario_.strategies.front().autoscale;
  if (!autoscaling_) return;
  profile::Slo slo;
  slo.ttft = (spec.slo_ttft_ms >= 0 ? spec.slo_ttft_ms : scenario_.record.slo.ttft_ms) / 1e3;
  slo.tpot = (spec.slo_tpot_ms >= 0 ? spec.slo_tpot_ms : scenario_.record.slo.tpot_ms) / 1e3;
  stabilizer_ = optimizer::Stabilizer(spec.stability);
  for (const AutoscaleDeployment& d : spec.deployments) {
    // The engine the fleet group of that GPU type runs, swept on a virtual clock.
    const auto group = std::find_if(scenario_.fleet.begin(), scenario_.fleet.end(), [&](auto& g) {
      return catalog_.findGpu(g.gpu) == catalog_.findGpu(d.gpu);
    });
    engine::ProfileCatalog tuned = catalog_;
    tuned.tuning = group->tuning;
    const engine::PerfConfig perf =
        engine::makePerfConfig(tuned, group->gpu, scenario_.model, group->tp);
    // As `gen-profile --emulated` sweeps it (its default grid).
    profile::GpuProfile p =
        profile::emulatedGpuProfile(perf, slo, profile::defaultEmulatedSweep(slo, scenario_.seed));
    const std::string canonical = catalog_.findGpu(d.gpu)->name;
    const auto price = scenario_.prices.find(canonical);
    p.cost = price != scenario_.prices.end() ? price->second : scenario_.prices.at(d.gpu);
    autoscale_profiles_.push_back(std::move(p));
    in_force_.push_back(activeReplicas(d.gpu));
    result_.autoscale_deployments.push_back(d.gpu);
  }
  demand_cells_.assign(observe::kShapeCells, 0);
  queue_.push(spec.interval, kAutoscale);
}

void Simulator::noteDemand(const SimRequest& q) {
  ++demand_cells_[static_cast<size_t>(observe::shapeCell(q.prompt_tokens, q.output_tokens))];
  ++demand_;
}

void Simulator::onAutoscale() {
  const AutoscaleSpec& spec = scenario_.autoscale;
  // Close this interval's load, as a gateway's load monitor publishes it (every arrival counts
  // as demand: the window plans for refused requests too).
  observe::LoadInterval interval;
  interval.model = scenario_.model;
  interval.gateway = "sim";
  interval.interval_s = static_cast<int>(spec.interval / kNsPerSec);
  interval.start = (now_ - spec.interval) / kNsPerSec;
  interval.completed = demand_;
  for (size_t c = 0; c < demand_cells_.size(); ++c) {
    if (demand_cells_[c] == 0) continue;
    interval.cells.push_back({static_cast<int>(c / observe::kOutputBuckets),
                              static_cast<int>(c % observe::kOutputBuckets), demand_cells_[c]});
    demand_cells_[c] = 0;
  }
  demand_ = 0;
  intervals_.push_back(std::move(interval));
  while (intervals_.size() > 1 &&
         intervals_.front().start + intervals_.front().interval_s <
             intervals_.back().start + intervals_.back().interval_s - spec.window_s) {
    intervals_.pop_front();
  }

  optimizer::MixProblem problem;
  problem.slice_factor = spec.slice_factor;
  problem.headroom = spec.headroom;
  for (size_t d = 0; d < spec.deployments.size(); ++d) {
    optimizer::DeploymentSpec deployment;
    deployment.name = spec.deployments[d].gpu;
    deployment.cost = autoscale_profiles_[d].cost;
    deployment.upper = spec.deployments[d].max_replicas;
    deployment.min_replicas = spec.deployments[d].min_replicas;
    deployment.profile = &autoscale_profiles_[d];
    problem.deployments.push_back(deployment);
  }
  double planned = 0;
  const std::vector<observe::LoadInterval> window(intervals_.begin(), intervals_.end());
  for (const optimizer::PlannedCell& p : optimizer::planLoad(window, spec.window_s)) {
    problem.cells.push_back(p.cell);
    planned += p.cell.rps;
  }
  optimizer::SolveOptions options;
  options.time_limit = spec.time_limit;
  const optimizer::IntervalDecision decision =
      optimizer::decideInterval(problem, stabilizer_, in_force_, now_, options);
  const optimizer::Recommendation& r = decision.answer;
  if (r.replicas.size() != spec.deployments.size()) return;

  // Put the answer in force; a replica count below the minimum never empties the fleet.
  bool changed = false;
  for (size_t d = 0; d < spec.deployments.size(); ++d) {
    const std::string& gpu = spec.deployments[d].gpu;
    const int target = std::max(r.replicas[d], spec.deployments[d].min_replicas);
    const int active = activeReplicas(gpu);
    if (target > active) addReplicas(gpu, target - active);
    if (target < active) removeReplicas(gpu, active - target);
    changed = changed || target != active;
  }
  int left = 0;
  for (const SimReplica& replica : replicas_) left += !replica.removed;
  if (left == 0) addReplicas(spec.deployments.front().gpu, 1);  // never an empty fleet
  if (changed || left == 0) applyFleet(now_);
  in_force_ = r.replicas;

  AutoscaleStep step;
  step.at_s = static_cast<double>(now_) / kNsPerSec;
  step.planned_rps = planned;
  step.kept = decision.kept_current;
  step.feasible = r.feasible;
  step.solve_ms = r.solve_ms;
  for (size_t d = 0; d < spec.deployments.size(); ++d) {
    step.replicas.push_back(activeReplicas(spec.deployments[d].gpu));
    step.usd_per_hour += step.replicas.back() * autoscale_profiles_[d].cost;
  }
  result_.autoscale.push_back(std::move(step));
}

}  // namespace switchyard::sim
