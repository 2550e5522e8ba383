// recommend(): one optimizer answer for one model's load — the MILP of mix_model.h solved with
// milp_solver.h, plus the rules around it:
//  - no load at all: every deployment at max(min_replicas, lower), feasible, nothing solved;
//  - cells no deployment can serve within its SLO, or bounds (availability) too tight for the
//    load: answer the maximum — each bounded deployment at its upper bound, each unbounded one
//    at what the servable part of the load needs — and flag the answer infeasible;
//  - the solver's time limit: its best incumbent, flagged timed_out; with no incumbent, a greedy
//    answer (each cell on the deployment where it costs least), flagged timed_out too.
// Never throws for any input. Pure apart from the solver's wall-clock time limit.
#pragma once

#include <string>
#include <vector>

#include "optimizer/milp_solver.h"
#include "optimizer/mix_model.h"

namespace switchyard::optimizer {

struct Recommendation {
  bool feasible = true;
  bool timed_out = false;
  bool no_load = false;
  SolveStatus status = SolveStatus::kOptimal;
  double cost = 0;
  double solve_ms = 0;
  std::vector<int> replicas;             // per deployment, in the problem's order
  MixModel model;                        // what was solved (cells, loads)
  std::vector<std::vector<int>> slices;  // [model cell][deployment]
  std::string note;                      // why it is infeasible or timed out, for logs and /debug
};

Recommendation recommend(const MixProblem& problem, const SolveOptions& options = {});

// The cost of given replica counts.
double costOf(const std::vector<DeploymentSpec>& deployments, const std::vector<int>& replicas);

}  // namespace switchyard::optimizer
