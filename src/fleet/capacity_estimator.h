// CapacityEstimator: learns how fast one replica drains work from the traffic the gateway sees.
//
// Every refresh (default 1 s) the control thread hands it the replica's cumulative counters. It
// converts them into a rate over a sliding window (default ~60 s) and smooths that rate with an
// exponentially weighted moving average (time constant default 10 s):
//   decode  = output tokens / s over the window               (generative work)
//           = completed requests / s of request latency        (tokenless work: embeddings,
//             i.e. the inverse of the mean latency)
//   prefill = prompt tokens / s of time-to-first-byte          (streamed requests)
// A refresh in which nothing completed carries no information about speed (the replica was idle,
// not slow): the previous estimate is kept rather than decayed, so an idle replica is not starved
// of the traffic that would re-measure it. Pure: time is passed in. Not thread-safe.
#pragma once

#include <cstdint>
#include <deque>

#include "core/clock.h"
#include "fleet/replica_state.h"

namespace switchyard::fleet {

struct CapacitySettings {
  TimeNs window = 60 * kNsPerSec;
  TimeNs time_constant = 10 * kNsPerSec;
};

struct CapacityCounters {
  int64_t output_tokens = 0;
  int64_t prefill_tokens = 0;
  int64_t prefill_ns = 0;
  int64_t tokenless_requests = 0;
  int64_t tokenless_latency_ns = 0;

  static CapacityCounters of(const ReplicaCounters& c);
};

class CapacityEstimator {
 public:
  explicit CapacityEstimator(CapacitySettings settings = {}) : settings_(settings) {}

  void observe(TimeNs now, const CapacityCounters& cumulative);
  const LearnedCapacity& learned() const { return learned_; }

 private:
  struct Sample {
    TimeNs at;
    CapacityCounters counters;
  };
  void smooth(double& estimate, double rate, TimeNs dt);

  CapacitySettings settings_;
  std::deque<Sample> samples_;  // oldest first, spanning at most the window
  LearnedCapacity learned_;
  TimeNs last_update_ = -1;
};

}  // namespace switchyard::fleet
