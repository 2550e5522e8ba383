// The GPU-mix problem as a mixed-integer linear program, built apart from any solver so it can
// be unit-tested and printed (`switchyard optimize --once --print-model`).
//
// Mélange's formulation (Griggs et al., 2024), as AIBrix's optimizer uses it: the load is a set
// of request-shape cells, each with a rate; every cell is cut into K equal slices (the slice
// factor), each slice is assigned to one deployment (GPU type), and each deployment gets an
// integer replica count large enough for the slices it serves:
//
//   minimise    Σ_d cost_d · n_d
//   subject to  Σ_d y_{c,d} = K                                  for every cell c
//               Σ_c (rate_c / K) · (1 + headroom) / maxRate_d(c) · y_{c,d} <= n_d   for every d
//               lower_d <= n_d <= upper_d,  n_d integer
//               y_{c,d} in {0…K} integer, fixed to 0 where deployment d cannot serve c's shape
//
// y_{c,d} counts the slices of c given to d: since a cell's K slices are identical, this is the
// binary slice→type assignment x_{s,d} with its K! symmetric copies folded into one variable
// (same optimum, far fewer branches). load_{c,d} = (1 + headroom) · rate_c / (K · maxRate_d(c)) is
// the fraction of one replica of d that one slice of c occupies; maxRate comes from the
// deployment's profile at the cell's shape (GpuProfile::maxRate).
//
// Cells with rate 0 are left out; cells no deployment can serve are left out and reported
// (`unservable`): the rest is still solved. Pure; O(cells × deployments).
#pragma once

#include <limits>
#include <string>
#include <vector>

#include "profile/profile.h"

namespace switchyard::optimizer {

struct LoadCell {
  double prompt_tokens = 0;
  double output_tokens = 0;
  double rps = 0;
};

struct DeploymentSpec {
  std::string name;
  double cost = 1;
  int lower = 0;         // replicas at least, always (the scale-down cool-down's floor)
  int upper = -1;        // replicas at most (availability); -1: unbounded
  int min_replicas = 0;  // replicas kept when there is no load at all (AIBrix's min_replicas)
  const profile::GpuProfile* profile = nullptr;  // must outlive the model
};

struct MixProblem {
  std::vector<DeploymentSpec> deployments;
  std::vector<LoadCell> cells;
  int slice_factor = 4;
  double headroom = 0;  // plan for (1 + headroom) × the rates
};

struct MixModel {
  struct Cell {
    size_t source = 0;  // index into MixProblem::cells
    LoadCell shape;
    std::vector<double> load;  // per deployment: one slice's load; +inf where it cannot serve
  };
  std::vector<DeploymentSpec> deployments;
  std::vector<Cell> cells;         // the modelled cells (rate > 0, servable)
  std::vector<size_t> unservable;  // MixProblem::cells indexes no deployment can serve
  int slice_factor = 4;

  static MixModel build(const MixProblem& problem);
  bool canServe(size_t cell, size_t deployment) const {
    return cells[cell].load[deployment] < std::numeric_limits<double>::infinity();
  }
  size_t variableCount() const;  // n_d plus the y_{c,d} that are not fixed to 0
  // CPLEX LP text of the model (variables n_<d>, y_<c>_<d>).
  std::string toLp() const;
};

// An answer to the model: replicas per deployment and the slices each serves.
struct MixSolution {
  std::vector<int> replicas;             // per deployment
  std::vector<std::vector<int>> slices;  // [cell][deployment] slice counts
  double cost = 0;
};

}  // namespace switchyard::optimizer
