// Solves a MixModel with GLPK: the LP relaxation (glp_simplex), then branch-and-cut from its
// basis (glp_intopt with cuts). GLPK was
// chosen over CBC for its small, stable C API; it solves the 8 types × 64 cells × 4 slices case
// well inside the 100 ms goal (bench/micro/optimizer_bench.cc) because slices are counted per
// cell (see mix_model.h), not assigned one by one.
//
// A time limit returns GLPK's best incumbent (kTimeLimit) when it has one, kNoSolution when it
// has none. GLPK keeps per-thread state: call from one thread at a time per thread (the
// optimizer's control thread, or a test). Never throws; GLPK's terminal output is off.
#pragma once

#include <string>

#include "core/clock.h"
#include "optimizer/mix_model.h"

namespace switchyard::optimizer {

enum class SolveStatus {
  kOptimal,     // proven optimal (within mip_gap)
  kTimeLimit,   // the time limit hit: the best incumbent
  kInfeasible,  // no assignment fits the replica bounds
  kNoSolution,  // the time limit hit before any feasible answer was found
};
const char* solveStatusName(SolveStatus status);

struct SolveOptions {
  TimeNs time_limit = 2 * kNsPerSec;
  double mip_gap = 0;  // relative; 0 = prove optimality
};

struct SolveResult {
  SolveStatus status = SolveStatus::kNoSolution;
  MixSolution solution;  // set for kOptimal and kTimeLimit
  double solve_ms = 0;
};

SolveResult solveMix(const MixModel& model, const SolveOptions& options = {});

}  // namespace switchyard::optimizer
