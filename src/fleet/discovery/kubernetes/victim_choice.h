// Victim choice for traffic-aware scale-down: which Pods of a Deployment are cheapest to lose.
// Pure (no I/O, no clock): the scale-down controller feeds it the live figures.
//
//   cost = requests in flight (all gateways)
//        + session_weight × requests that followed a session's pin to it in the window
//        + job_weight × async resources created on it in the window
//        − 0.5 while it is still warming up under slow start (no cache, few sessions yet)
//
// The standing choice is kept unless another candidate is cheaper by more than `margin`: the
// deletion-cost annotation must not flap with every request (Kubernetes warns against updating
// it often). Ties go to the Pod name, so every gateway computing the same inputs agrees.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/clock.h"
#include "fleet/discovery/kubernetes/settings.h"

namespace switchyard::fleet::kubernetes {

// A replica ready for less than this counts as warming: slow start's default ramp (its window is
// per model, but the bonus is small and only breaks near-ties).
constexpr TimeNs kWarmingWindow = 30 * kNsPerSec;

struct VictimCandidate {
  std::string pod;  // the Pod's name (unique within its Deployment)
  double in_flight = 0;
  double session_requests = 0;
  double jobs = 0;
  bool warming = false;  // ready for less than kWarmingWindow
};

double victimCost(const VictimCandidate& candidate, const ScaleDownSettings& settings);

// Up to `count` victims, cheapest first. `current`: the standing choice (Pod names); each one
// still a candidate is kept unless an unchosen candidate is cheaper by more than
// settings.switch_margin.
std::vector<std::string> chooseVictims(const std::vector<VictimCandidate>& candidates,
                                       const std::vector<std::string>& current, size_t count,
                                       const ScaleDownSettings& settings);

// The value of `vllm:deployment_replicas` in the optimizer's answer (Prometheus text), in
// replicas (divided by `unit`, rounded up); -1 when absent or malformed.
int parseRecommendedReplicas(std::string_view text, double unit);

}  // namespace switchyard::fleet::kubernetes
