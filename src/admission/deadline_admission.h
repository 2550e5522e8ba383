// Deadline-aware admission's decisions (docs/admission.md, "The decision"), apart from the queue
// that holds waiting requests: when a request's deadline falls, whether it can still finish if it
// starts now on the replica routing chose, and whether a request waiting in the gateway's queue
// is still worth keeping (its age; in deadline mode, its predicted wait and execution). The
// gateway's request path (gateway/request_pipeline.cc) and the fleet simulator (src/sim/) both
// decide with these.
//
// Pure, inline, allocation-free: called per attempt and per queued request's re-check.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "admission/execution_estimate.h"
#include "core/clock.h"
#include "fleet/fleet_snapshot.h"
#include "fleet/replica_state.h"

namespace switchyard::admission {

// The request's absolute deadline: the time it gave (`remaining` >= 0, from its headers), else
// the model's default_deadline; -1 when it has none.
inline TimeNs deadlineAt(TimeNs arrived, TimeNs remaining, const fleet::AdmissionParams& params) {
  const TimeNs left =
      remaining >= 0 ? remaining : (params.default_deadline > 0 ? params.default_deadline : -1);
  return left >= 0 ? arrived + left : -1;
}

// Whether deadlines change this request's decisions: the model queues in deadline mode and the
// request has a deadline.
inline bool deadlineAware(const fleet::AdmissionParams& params, TimeNs deadline_at) {
  return params.queue == fleet::QueueMode::kDeadline && deadline_at >= 0;
}

// The request's execution on `replica` if it started now: it joins the replica's streams (every
// gateway's, as last known) as one more, and its prefill waits for the prompts this gateway sent
// there that have not produced a first token yet (the engine prefills admitted requests first).
inline ExecutionEstimate executionIfStartedNow(const fleet::ReplicaState& replica,
                                               const fleet::ModelEntry& model, double prompt_tokens,
                                               double output_tokens) {
  const double pending = static_cast<double>(std::max<int64_t>(
      0, replica.counters().prefill_pending_tokens.load(std::memory_order_relaxed)));
  return estimateExecution(replica.capacity(), model.runtime->learnedMeans(),
                           std::max(0.0, prompt_tokens) + pending, output_tokens,
                           static_cast<double>(replica.globalRunning() + 1));
}

// Whether a request whose execution is predicted to take `predicted` (-1 unknown: never refused
// on) misses `deadline_at` if it starts at `now`.
inline bool cannotFinishIfStartedNow(TimeNs now, TimeNs predicted, TimeNs deadline_at) {
  return predicted >= 0 && now + predicted > deadline_at;
}

// A queued request's execution once its turn comes: on an average replica of the model at its
// in-flight limit (the slot it gets frees up at that load). -1 unknown.
inline TimeNs queuedExecution(const fleet::ModelEntry& model, double prompt_tokens,
                              double output_tokens) {
  const double concurrency = model.limits.max_inflight_per_replica > 0
                                 ? static_cast<double>(model.limits.max_inflight_per_replica)
                                 : 1.0;
  return estimateExecution(fleet::LearnedCapacity{}, model.runtime->learnedMeans(), prompt_tokens,
                           output_tokens, concurrency)
      .total;
}

// A queued request's wait for its turn: the `ahead` requests before it, and itself, drain at the
// rate this gateway has been completing the model's requests (fleet::refreshCompletionRate); 0
// while that rate is unknown.
inline TimeNs queuedWait(const fleet::ModelEntry& model, size_t ahead) {
  const double rate = model.runtime->completion_rate.load(std::memory_order_relaxed);
  return rate > 0 ? static_cast<TimeNs>((static_cast<double>(ahead) + 1) / rate * 1e9) : 0;
}

enum class QueuedVerdict : uint8_t {
  kWaits,         // keep waiting (the head tries routing)
  kTooOld,        // waited max_wait: refused (queue_timeout)
  kCannotFinish,  // deadline mode: its wait and execution pass its deadline (deadline_unattainable)
};

struct QueuedCheck {
  QueuedVerdict verdict = QueuedVerdict::kWaits;
  TimeNs wait = 0;  // predicted wait (deadline mode)
  TimeNs run = -1;  // predicted execution (deadline mode; -1 unknown)
};

// A queued request's re-check at `now` (it entered the queue at `enqueued_at`): refused once it
// waited max_wait; in deadline mode, refused the moment its predicted wait and execution no
// longer fit before `deadline_at`. `ahead()` gives the requests queued before it; it is asked
// only in deadline mode.
template <typename Ahead>
QueuedCheck recheckQueued(const fleet::ModelEntry& model, TimeNs now, TimeNs enqueued_at,
                          TimeNs deadline_at, double prompt_tokens, double output_tokens,
                          Ahead&& ahead) {
  QueuedCheck check;
  const fleet::AdmissionParams& params = model.admission;
  if (now - enqueued_at >= params.max_wait) {
    check.verdict = QueuedVerdict::kTooOld;
    return check;
  }
  if (!deadlineAware(params, deadline_at)) return check;
  check.wait = queuedWait(model, ahead());
  check.run = queuedExecution(model, prompt_tokens, output_tokens);
  if (now + check.wait + std::max<TimeNs>(check.run, 0) > deadline_at) {
    check.verdict = QueuedVerdict::kCannotFinish;
  }
  return check;
}

}  // namespace switchyard::admission
