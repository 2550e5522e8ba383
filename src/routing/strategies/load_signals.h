// Reads the candidates' live inputs once per decision, with one rule for unknowns: a replica
// whose telemetry is stale or missing is never made attractive by it. It is given the worst KV
// usage and queue of the candidates with fresh telemetry; if no candidate has fresh telemetry, all
// are treated alike. A replica whose telemetry is fresh but whose engine does not export a KV
// metric is treated as fully free (the engine lacks the metric; that is not a sign of pressure).
#pragma once

#include <span>

#include "routing/strategy.h"

namespace switchyard::routing::internal {

// One replica's inputs as read, before the rules that need every candidate: a missing KV metric
// reads 0 (free), a missing queue -1 (filled in by gatherInputs). Inline and returned by value:
// the one-pass scorers keep it in registers.
[[gnu::always_inline]] inline CandidateInputs readCandidate(const fleet::ReplicaState& replica, TimeNs now,
                                     TimeNs max_age) {
  bool fresh = false;
  const fleet::EngineSignals s = replica.signals(now, max_age, nullptr, &fresh);
  const fleet::LearnedCapacity capacity = replica.capacity();
  CandidateInputs in;
  in.running = static_cast<double>(replica.globalRunning());
  in.fresh = fresh;
  in.kv_usage = s.hasKvUsage() ? s.kv_usage : 0.0;
  in.cpu_kv_usage = s.hasCpuKvUsage() ? s.cpu_kv_usage : 0.0;
  in.waiting = s.hasWaiting() ? s.waiting : -1.0;
  in.decode = capacity.decode;
  in.prefill = capacity.prefill;
  in.tokenless = capacity.tokenless;
  in.slowdown = capacity.slowdown;
  return in;
}

// Fills context.inputs[i] for candidates[i]: read, stale and missing values filled in, and slow
// start's synthetic load and capacity ease-in applied (routing/slow_start.h).
void gatherInputs(const ScoringContext& context, std::span<const uint32_t> candidates);

}  // namespace switchyard::routing::internal
