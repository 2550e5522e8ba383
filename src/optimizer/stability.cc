#include "optimizer/stability.h"

#include <algorithm>

namespace switchyard::optimizer {

std::vector<int> Stabilizer::floors(TimeNs now, size_t deployments) const {
  std::vector<int> out(deployments, 0);
  for (const Answer& a : history_) {
    if (now - a.at >= settings_.scale_down_cooldown) continue;
    for (size_t d = 0; d < deployments && d < a.replicas.size(); ++d) {
      out[d] = std::max(out[d], a.replicas[d]);
    }
  }
  return out;
}

void Stabilizer::record(TimeNs now, const std::vector<int>& replicas) {
  history_.push_back({now, replicas});
  while (!history_.empty() && now - history_.front().at >= settings_.scale_down_cooldown) {
    history_.pop_front();
  }
}

}  // namespace switchyard::optimizer
