#include "routing/strategies/load_signals.h"

#include <algorithm>

#include "routing/slow_start.h"

namespace switchyard::routing::internal {

void gatherInputs(const ScoringContext& context, std::span<const uint32_t> candidates) {
  double worst_kv = 0, worst_waiting = 0;
  bool fill_in = false;  // some candidate lacks fresh telemetry or a queue signal
  bool warming = false;  // some candidate is in its slow-start ramp
  // The spans' pointers are hoisted so that the stores into `inputs` cannot make the compiler
  // reload them.
  CandidateInputs* inputs = context.inputs.data();
  const TimeNs now = context.now;
  const TimeNs max_age = context.snapshot.signal_max_age;
  for (size_t i = 0; i < candidates.size(); ++i) {
    const fleet::ReplicaState& replica = context.model.stateAt(candidates[i]);
    CandidateInputs& in = inputs[i];
    readCandidate(replica, now, max_age, in);
    warming |= replica.readySince() != fleet::ReplicaState::kEstablished;
    fill_in |= !in.fresh || in.waiting < 0;
    if (in.fresh) {
      worst_kv = std::max(worst_kv, in.kv_usage);
      worst_waiting = std::max(worst_waiting, in.waiting);
    }
  }
  for (size_t i = 0; fill_in && i < candidates.size(); ++i) {
    CandidateInputs& in = inputs[i];
    if (!in.fresh) {
      in.kv_usage = worst_kv;
      in.cpu_kv_usage = 0;
      in.waiting = worst_waiting;
    } else if (in.waiting < 0) {
      in.waiting = worst_waiting;
    }
  }
  // Slow start: synthetic load, capacity not yet trusted.
  if (warming) easeInWarming(context, candidates);
}

}  // namespace switchyard::routing::internal
