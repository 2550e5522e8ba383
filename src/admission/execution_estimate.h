// How long a request would take on a replica if it started now: its prefill plus its output at
// the time per token the replica gives each stream at the concurrency it would join. From what
// the capacity estimator learned (fleet/capacity_estimator.h): the decode capacity at the
// reference concurrency and the batching curve t(n) = t0·(1 + s·n), so
//   time per token at n streams = (n_ref / decode) · (1 + s·n) / (1 + s·n_ref)
//   prefill                     = prompt tokens / prefill capacity
// A replica without an estimate uses the model's learned means; with nothing learned at all the
// estimate is unknown (-1), and callers must not refuse on it.
//
// Pure, inline, allocation-free: called per candidate on the request path.
#pragma once

#include <cmath>

#include "core/clock.h"
#include "fleet/fleet_snapshot.h"

namespace switchyard::admission {

struct ExecutionEstimate {
  TimeNs prefill = -1;        // time to the first token; -1 unknown
  TimeNs time_per_token = -1;  // per output token at the concurrency joined; -1 unknown
  TimeNs total = -1;          // prefill + output × time per token; -1 unknown
};

inline ExecutionEstimate estimateExecution(const fleet::LearnedCapacity& own,
                                           const fleet::LearnedMeans& means,
                                           double prompt_tokens, double output_tokens,
                                           double concurrency) {
  ExecutionEstimate e;
  const double decode = std::isfinite(own.decode) ? own.decode : means.decode;
  if (!(decode > 0) || own.tokenless) return e;
  double slowdown = std::isfinite(own.slowdown) ? own.slowdown : means.slowdown;
  if (!std::isfinite(slowdown) || slowdown < 0) slowdown = 0;
  const double n_ref = fleet::kReferenceConcurrency;
  const double per_token =
      n_ref / decode * (1 + slowdown * std::max(1.0, concurrency)) / (1 + slowdown * n_ref);
  const double prefill_rate = std::isfinite(own.prefill) ? own.prefill : means.prefill;
  const double prefill =
      prompt_tokens > 0 && prefill_rate > 0 ? prompt_tokens / prefill_rate : 0.0;
  e.time_per_token = static_cast<TimeNs>(per_token * 1e9);
  e.prefill = static_cast<TimeNs>(prefill * 1e9);
  e.total = static_cast<TimeNs>((prefill + std::max(1.0, output_tokens) * per_token) * 1e9);
  return e;
}

}  // namespace switchyard::admission
