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
// reads 0 (free), a missing queue -1 (filled in by gatherInputs). Written field by field and
// inlined: into the table, or into a local that the one-pass scorers keep in registers.
[[gnu::always_inline]] inline void readCandidate(const fleet::ReplicaState& replica, TimeNs now,
                                                 TimeNs max_age, CandidateInputs& in) {
  bool fresh = false;
  const fleet::EngineSignals s = replica.signals(now, max_age, nullptr, &fresh);
  const fleet::LearnedCapacity capacity = replica.capacity();
  in.running = static_cast<double>(replica.globalRunning());
  in.fresh = fresh;
  in.kv_usage = s.hasKvUsage() ? s.kv_usage : 0.0;
  in.cpu_kv_usage = s.hasCpuKvUsage() ? s.cpu_kv_usage : 0.0;
  in.waiting = s.hasWaiting() ? s.waiting : -1.0;
  in.decode = capacity.decode;
  in.prefill = capacity.prefill;
  in.tokenless = capacity.tokenless;
  in.slowdown = capacity.slowdown;
  in.synthetic_load = 0;
  in.warmth = 1;
}

// Fills context.inputs[i] for candidates[i]: read, stale and missing values filled in, and slow
// start's synthetic load and capacity ease-in applied (routing/slow_start.h).
void gatherInputs(const ScoringContext& context, std::span<const uint32_t> candidates);

}  // namespace switchyard::routing::internal
