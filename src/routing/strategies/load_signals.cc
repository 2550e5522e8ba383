#include "routing/strategies/load_signals.h"

#include <algorithm>
#include <cmath>

#include "routing/slow_start.h"

namespace switchyard::routing::internal {
namespace {
bool known(double v) { return std::isfinite(v) && v > 0; }
}  // namespace

CandidateAggregates gatherInputs(const ScoringContext& context,
                                 std::span<const uint32_t> candidates) {
  double worst_kv = 0, worst_waiting = 0;
  double decode_sum = 0, prefill_sum = 0, slowdown_sum = 0;
  int decode_n = 0, prefill_n = 0, slowdown_n = 0;
  bool fill_in = false;  // some candidate lacks fresh telemetry or a queue signal
  bool warming = false;  // some candidate is in its slow-start ramp
  // One pass over the replicas' state (three cache lines each: counters, signals, learned).
  for (size_t i = 0; i < candidates.size(); ++i) {
    const fleet::ReplicaState& replica = *context.model.replicas[candidates[i]].state;
    CandidateInputs& in = context.inputs[i];
    bool fresh = false;
    const fleet::EngineSignals s =
        replica.signals(context.now, context.snapshot.signal_max_age, nullptr, &fresh);
    const fleet::LearnedCapacity capacity = replica.capacity();
    in.running = static_cast<double>(replica.globalRunning());
    in.fresh = fresh;
    in.kv_usage = s.hasKvUsage() ? s.kv_usage : 0.0;
    in.cpu_kv_usage = s.hasCpuKvUsage() ? s.cpu_kv_usage : 0.0;
    in.waiting = s.hasWaiting() ? s.waiting : -1.0;  // -1: fill in below
    in.decode = capacity.decode;
    in.prefill = capacity.prefill;
    in.tokenless = capacity.tokenless;
    in.slowdown = capacity.slowdown;
    in.synthetic_load = 0;
    in.warmth = 1;
    warming |= replica.readySince() != fleet::ReplicaState::kEstablished;
    fill_in |= !fresh || in.waiting < 0;
    if (fresh) {
      worst_kv = std::max(worst_kv, in.kv_usage);
      worst_waiting = std::max(worst_waiting, in.waiting);
    }
    if (known(in.decode)) {
      decode_sum += in.decode;
      ++decode_n;
    }
    if (known(in.prefill)) {
      prefill_sum += in.prefill;
      ++prefill_n;
    }
    if (in.slowdown >= 0) {  // 0 (flat) is known; NaN is not
      slowdown_sum += in.slowdown;
      ++slowdown_n;
    }
  }
  for (size_t i = 0; fill_in && i < candidates.size(); ++i) {
    CandidateInputs& in = context.inputs[i];
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
  return {decode_n ? decode_sum / decode_n : std::nan(""),
          prefill_n ? prefill_sum / prefill_n : std::nan(""),
          slowdown_n ? slowdown_sum / slowdown_n : std::nan("")};
}

}  // namespace switchyard::routing::internal
