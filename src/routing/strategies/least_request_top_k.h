#pragma once

#include "routing/strategy.h"

namespace switchyard::routing {

// least-request-top-k: uniform at random among up to K of the least-loaded replicas whose load
// is within max(tolerance_requests, tolerance_fraction × minimum) of the minimum, where
//   load = in-flight across every gateway (ReplicaState::globalRunning) + slow-start synthetic
// load (routing/slow_start.h). Plain least-request sends every gateway that reads the same
// shared counts to the same replica before the counts catch up; a random pick among the near
// minimum spreads those concurrent decisions without ever choosing a replica that is clearly
// busier. Slow start stops a just-ready replica's empty queue from drawing them all. Scores are
// the loads; the router's top-K picker (pickTopK) does the choosing (ScoreNote::top_k). With
// K = 1 it is least-request with slow start. Knobs: ModelEntry::top_k, ModelEntry::slow_start.
class LeastRequestTopKStrategy final : public Strategy {
 public:
  std::string_view name() const override { return "least-request-top-k"; }
  ScoreNote score(const ScoringContext& context, std::span<const uint32_t> candidate_indices,
                  std::span<double> scores, std::span<double> tiebreak) const override;
  bool autoBlendsLoadBalance() const override { return false; }  // a plain load baseline
};

}  // namespace switchyard::routing
