// Reads the candidates' live inputs once per decision, with one rule for unknowns: a replica
// whose telemetry is stale or missing is never made attractive by it. It is given the worst KV
// usage and queue of the candidates with fresh telemetry; if no candidate has fresh telemetry, all
// are treated alike. A replica whose telemetry is fresh but whose engine does not export a KV
// metric is treated as fully free (the engine lacks the metric; that is not a sign of pressure).
#pragma once

#include <span>

#include "routing/strategy.h"

namespace switchyard::routing::internal {

struct CandidateAggregates {
  double mean_decode;   // mean learned capacity over the candidates that have one; NaN if none
  double mean_prefill;  // likewise for prefill
  double mean_slowdown;  // likewise for the batching curve's slowdown
};

// Fills context.inputs[i] for candidates[i] and returns the aggregates.
CandidateAggregates gatherInputs(const ScoringContext& context,
                                 std::span<const uint32_t> candidates);

}  // namespace switchyard::routing::internal
