#include "optimizer/milp_solver.h"

#include <glpk.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <vector>

namespace switchyard::optimizer {

const char* solveStatusName(SolveStatus status) {
  switch (status) {
    case SolveStatus::kOptimal:
      return "optimal";
    case SolveStatus::kTimeLimit:
      return "time_limit";
    case SolveStatus::kInfeasible:
      return "infeasible";
    case SolveStatus::kNoSolution:
      return "no_solution";
  }
  return "unknown";
}

SolveResult solveMix(const MixModel& model, const SolveOptions& options) {
  const auto started = std::chrono::steady_clock::now();
  SolveResult result;
  const int deployments = static_cast<int>(model.deployments.size());
  const int cells = static_cast<int>(model.cells.size());

  if (deployments == 0 || cells == 0) {
    // Nothing to place: every deployment at its lower bound (GLPK wants rows and columns).
    result.status = cells == 0 ? SolveStatus::kOptimal : SolveStatus::kInfeasible;
    for (const DeploymentSpec& spec : model.deployments) {
      result.solution.replicas.push_back(std::max(0, spec.lower));
      result.solution.cost += spec.cost * result.solution.replicas.back();
    }
    return result;
  }
  glp_term_out(GLP_OFF);
  glp_prob* lp = glp_create_prob();
  glp_set_obj_dir(lp, GLP_MIN);
  // Columns: n_d first, then the y_{c,d} a deployment can serve.
  glp_add_cols(lp, deployments);
  for (int d = 0; d < deployments; ++d) {
    const DeploymentSpec& spec = model.deployments[d];
    const int lower = std::max(0, spec.lower);
    if (spec.upper >= 0) {
      const int upper = std::max(lower, spec.upper);
      glp_set_col_bnds(lp, d + 1, upper == lower ? GLP_FX : GLP_DB, lower, upper);
    } else {
      glp_set_col_bnds(lp, d + 1, GLP_LO, lower, 0);
    }
    glp_set_col_kind(lp, d + 1, GLP_IV);
    glp_set_obj_coef(lp, d + 1, spec.cost);
  }
  std::vector<std::vector<int>> column(cells, std::vector<int>(deployments, 0));
  for (int c = 0; c < cells; ++c) {
    for (int d = 0; d < deployments; ++d) {
      if (!model.canServe(c, d)) continue;
      const int j = glp_add_cols(lp, 1);
      glp_set_col_bnds(lp, j, GLP_DB, 0, model.slice_factor);
      glp_set_col_kind(lp, j, GLP_IV);
      column[c][d] = j;
    }
  }
  // Rows: one slice-count equality per cell, one capacity row per deployment.
  std::vector<int> ia{0}, ja{0};
  std::vector<double> ar{0};
  glp_add_rows(lp, cells);
  for (int c = 0; c < cells; ++c) {
    glp_set_row_bnds(lp, c + 1, GLP_FX, model.slice_factor, model.slice_factor);
    for (int d = 0; d < deployments; ++d) {
      if (column[c][d] == 0) continue;
      ia.push_back(c + 1);
      ja.push_back(column[c][d]);
      ar.push_back(1.0);
    }
  }
  glp_add_rows(lp, deployments);
  for (int d = 0; d < deployments; ++d) {
    const int row = cells + d + 1;
    glp_set_row_bnds(lp, row, GLP_UP, 0, 0);
    for (int c = 0; c < cells; ++c) {
      if (column[c][d] == 0) continue;
      ia.push_back(row);
      ja.push_back(column[c][d]);
      ar.push_back(model.cells[c].load[d]);
    }
    ia.push_back(row);
    ja.push_back(d + 1);
    ar.push_back(-1.0);
  }
  glp_load_matrix(lp, static_cast<int>(ia.size()) - 1, ia.data(), ja.data(), ar.data());

  // The LP relaxation first, then branch-and-cut from its basis. GLPK's MIP presolver is left
  // off: on models it reduces to nothing it aborts the process (glp_add_cols with 0 columns).
  const int time_limit_ms =
      static_cast<int>(std::clamp<TimeNs>(options.time_limit / kNsPerMs, 1, 1 << 30));
  glp_smcp smcp;
  glp_init_smcp(&smcp);
  smcp.msg_lev = GLP_MSG_OFF;
  smcp.presolve = GLP_OFF;
  smcp.tm_lim = time_limit_ms;
  const int lp_rc = glp_simplex(lp, &smcp);
  const int lp_status = glp_get_status(lp);
  if (lp_rc != 0 || lp_status != GLP_OPT) {
    result.status = lp_status == GLP_NOFEAS || lp_rc == GLP_ENOPFS ? SolveStatus::kInfeasible
                                                                   : SolveStatus::kNoSolution;
    glp_delete_prob(lp);
    result.solve_ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started)
            .count();
    return result;
  }
  glp_iocp parm;
  glp_init_iocp(&parm);
  parm.msg_lev = GLP_MSG_OFF;
  parm.presolve = GLP_OFF;
  // Measured on bench/micro/optimizer_bench.cc (8 types × 64 cells × 4 slices): hybrid
  // pseudo-cost branching and MIR cuts prove optimality fastest; Gomory cuts and the
  // feasibility pump cost more than they save on this model.
  parm.br_tech = GLP_BR_PCH;
  parm.mir_cuts = GLP_ON;
  parm.cov_cuts = GLP_ON;
  parm.mip_gap = options.mip_gap;
  parm.tm_lim = time_limit_ms;
  const int rc = glp_intopt(lp, &parm);
  const int status = glp_mip_status(lp);
  if (status == GLP_OPT || status == GLP_FEAS) {
    result.status = status == GLP_OPT && rc == 0 ? SolveStatus::kOptimal : SolveStatus::kTimeLimit;
    MixSolution& s = result.solution;
    s.replicas.resize(deployments);
    for (int d = 0; d < deployments; ++d) {
      s.replicas[d] = static_cast<int>(std::lround(glp_mip_col_val(lp, d + 1)));
      s.cost += model.deployments[d].cost * s.replicas[d];
    }
    s.slices.assign(cells, std::vector<int>(deployments, 0));
    for (int c = 0; c < cells; ++c) {
      for (int d = 0; d < deployments; ++d) {
        if (column[c][d] != 0) {
          s.slices[c][d] = static_cast<int>(std::lround(glp_mip_col_val(lp, column[c][d])));
        }
      }
    }
  } else if (status == GLP_NOFEAS) {
    result.status = SolveStatus::kInfeasible;
  } else {
    result.status = SolveStatus::kNoSolution;
  }
  glp_delete_prob(lp);
  result.solve_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count();
  return result;
}

}  // namespace switchyard::optimizer
