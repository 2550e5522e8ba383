#include "optimizer/optimizer.h"

#include <fmt/format.h>

#include <cmath>
#include <limits>

namespace switchyard::optimizer {
namespace {

int clampReplicas(const DeploymentSpec& d, int n) {
  n = std::max(n, std::max(0, d.lower));
  if (d.upper >= 0) n = std::min(n, std::max(d.upper, std::max(0, d.lower)));
  return n;
}

// Each cell wholly on the deployment where it costs least per unit of load, then the replicas
// its load needs. Used when the solver gives nothing.
MixSolution greedy(const MixModel& model) {
  MixSolution s;
  const size_t deployments = model.deployments.size();
  std::vector<double> load(deployments, 0);
  s.slices.assign(model.cells.size(), std::vector<int>(deployments, 0));
  for (size_t c = 0; c < model.cells.size(); ++c) {
    size_t best = deployments;
    double best_cost = std::numeric_limits<double>::infinity();
    for (size_t d = 0; d < deployments; ++d) {
      if (!model.canServe(c, d)) continue;
      const double cost = model.cells[c].load[d] * model.deployments[d].cost;
      if (cost < best_cost) {
        best_cost = cost;
        best = d;
      }
    }
    if (best == deployments) continue;
    s.slices[c][best] = model.slice_factor;
    load[best] += model.cells[c].load[best] * model.slice_factor;
  }
  s.replicas.resize(deployments);
  for (size_t d = 0; d < deployments; ++d) {
    s.replicas[d] = std::max(static_cast<int>(std::ceil(load[d] - 1e-9)),
                             std::max(0, model.deployments[d].lower));
  }
  s.cost = costOf(model.deployments, s.replicas);
  return s;
}

bool withinBounds(const MixModel& model, const std::vector<int>& replicas) {
  for (size_t d = 0; d < replicas.size(); ++d) {
    const int upper = model.deployments[d].upper;
    if (upper >= 0 && replicas[d] > upper) return false;
  }
  return true;
}

}  // namespace

double costOf(const std::vector<DeploymentSpec>& deployments, const std::vector<int>& replicas) {
  double cost = 0;
  for (size_t d = 0; d < deployments.size() && d < replicas.size(); ++d) {
    cost += deployments[d].cost * replicas[d];
  }
  return cost;
}

Recommendation recommend(const MixProblem& problem, const SolveOptions& options) {
  Recommendation r;
  r.model = MixModel::build(problem);
  const auto& deployments = problem.deployments;
  double total = 0;
  for (const LoadCell& c : problem.cells) {
    if (c.rps > 0 && std::isfinite(c.rps)) total += c.rps;
  }
  if (total <= 0) {
    r.no_load = true;
    for (const DeploymentSpec& d : deployments) {
      r.replicas.push_back(clampReplicas(d, d.min_replicas));
    }
    r.cost = costOf(deployments, r.replicas);
    return r;
  }

  SolveResult solved = solveMix(r.model, options);
  r.status = solved.status;
  r.solve_ms = solved.solve_ms;
  MixSolution solution;
  bool have = false;
  if (solved.status == SolveStatus::kOptimal || solved.status == SolveStatus::kTimeLimit) {
    solution = std::move(solved.solution);
    have = true;
    r.timed_out = solved.status == SolveStatus::kTimeLimit;
    if (r.timed_out) r.note = "solver time limit: best incumbent";
  } else if (solved.status == SolveStatus::kNoSolution) {
    solution = greedy(r.model);
    have = withinBounds(r.model, solution.replicas);
    r.timed_out = true;
    r.note = "solver time limit without an incumbent: greedy answer";
  }

  if (have && r.model.unservable.empty()) {
    r.replicas = std::move(solution.replicas);
    r.slices = std::move(solution.slices);
    r.cost = costOf(deployments, r.replicas);
    return r;
  }

  // Infeasible: the maximum where there is one, what the servable load needs elsewhere.
  r.feasible = false;
  if (!have) {
    MixSolution fallback = greedy(r.model);
    solution.replicas = fallback.replicas;
    solution.slices = fallback.slices;
  }
  r.slices = std::move(solution.slices);
  r.replicas.resize(deployments.size());
  for (size_t d = 0; d < deployments.size(); ++d) {
    const int needed = d < solution.replicas.size() ? solution.replicas[d] : 0;
    r.replicas[d] = deployments[d].upper >= 0 ? std::max(deployments[d].upper, 0)
                                              : clampReplicas(deployments[d], needed);
  }
  r.cost = costOf(deployments, r.replicas);
  std::string why;
  if (!r.model.unservable.empty()) {
    why = fmt::format("{} of {} load cells cannot meet the SLO on any deployment",
                      r.model.unservable.size(), problem.cells.size());
  }
  if (!have || solved.status == SolveStatus::kInfeasible) {
    if (!why.empty()) why += "; ";
    why += "the load needs more replicas than max_replicas allows";
  }
  r.note = why + ": answering the maximum";
  return r;
}

}  // namespace switchyard::optimizer
