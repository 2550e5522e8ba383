#include "optimizer/mix_model.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace switchyard::optimizer {

MixModel MixModel::build(const MixProblem& problem) {
  MixModel model;
  model.deployments = problem.deployments;
  model.slice_factor = std::max(1, problem.slice_factor);
  const double k = model.slice_factor;
  const double scale = 1.0 + std::max(0.0, problem.headroom);
  for (size_t c = 0; c < problem.cells.size(); ++c) {
    const LoadCell& cell = problem.cells[c];
    if (!(cell.rps > 0) || !std::isfinite(cell.rps)) continue;
    Cell out;
    out.source = c;
    out.shape = cell;
    bool any = false;
    for (const DeploymentSpec& d : model.deployments) {
      const double max_rate =
          d.profile ? d.profile->maxRate(cell.prompt_tokens, cell.output_tokens) : 0;
      const bool usable = max_rate > 0 && d.upper != 0;
      out.load.push_back(usable ? cell.rps * scale / (k * max_rate)
                                : std::numeric_limits<double>::infinity());
      any = any || usable;
    }
    if (!any) {
      model.unservable.push_back(c);
      continue;
    }
    model.cells.push_back(std::move(out));
  }
  return model;
}

size_t MixModel::variableCount() const {
  size_t n = deployments.size();
  for (size_t c = 0; c < cells.size(); ++c) {
    for (size_t d = 0; d < deployments.size(); ++d) n += canServe(c, d);
  }
  return n;
}

std::string MixModel::toLp() const {
  std::string out = "\\ GPU mix: minimise the cost of the replicas\nMinimize\n cost:";
  auto it = std::back_inserter(out);
  for (size_t d = 0; d < deployments.size(); ++d) {
    fmt::format_to(it, " {}{} n_{}", d ? "+ " : "", deployments[d].cost, d);
  }
  out += "\nSubject To\n";
  for (size_t c = 0; c < cells.size(); ++c) {
    fmt::format_to(it, " slices_{}:", c);
    bool first = true;
    for (size_t d = 0; d < deployments.size(); ++d) {
      if (!canServe(c, d)) continue;
      fmt::format_to(it, " {}y_{}_{}", first ? "" : "+ ", c, d);
      first = false;
    }
    fmt::format_to(it, " = {}\n", slice_factor);
  }
  for (size_t d = 0; d < deployments.size(); ++d) {
    fmt::format_to(it, " capacity_{}:", d);
    for (size_t c = 0; c < cells.size(); ++c) {
      if (canServe(c, d)) fmt::format_to(it, " + {:.9g} y_{}_{}", cells[c].load[d], c, d);
    }
    fmt::format_to(it, " - n_{} <= 0\n", d);
  }
  out += "Bounds\n";
  for (size_t d = 0; d < deployments.size(); ++d) {
    if (deployments[d].upper >= 0) {
      fmt::format_to(it, " {} <= n_{} <= {}\n", deployments[d].lower, d, deployments[d].upper);
    } else {
      fmt::format_to(it, " n_{} >= {}\n", d, deployments[d].lower);
    }
  }
  for (size_t c = 0; c < cells.size(); ++c) {
    for (size_t d = 0; d < deployments.size(); ++d) {
      if (canServe(c, d)) fmt::format_to(it, " 0 <= y_{}_{} <= {}\n", c, d, slice_factor);
    }
  }
  out += "General\n";
  for (size_t d = 0; d < deployments.size(); ++d) fmt::format_to(it, " n_{}\n", d);
  for (size_t c = 0; c < cells.size(); ++c) {
    for (size_t d = 0; d < deployments.size(); ++d) {
      if (canServe(c, d)) fmt::format_to(it, " y_{}_{}\n", c, d);
    }
  }
  out += "End\n";
  for (size_t c = 0; c < cells.size(); ++c) {
    fmt::format_to(it, "\\ cell {}: prompt {:g} tokens, output {:g} tokens, {:g} req/s\n", c,
                   cells[c].shape.prompt_tokens, cells[c].shape.output_tokens, cells[c].shape.rps);
  }
  for (size_t d = 0; d < deployments.size(); ++d) {
    fmt::format_to(it, "\\ n_{}: {}\n", d, deployments[d].name);
  }
  return out;
}

}  // namespace switchyard::optimizer
