// ReplicaHealth: the health state machine of one replica (docs/operations.md). Pure: time and
// observations are passed in; the control thread's HealthManager drives one per replica.
//
//   healthy ──(N consecutive request failures + failed confirming probe,
//              or 2N consecutive failures, or M failed probes, or load outlier)──► excluded
//   excluded ──(backoff elapsed)──► half-open
//   half-open ──(K successes)──► healthy
//   half-open ──(any failure)──► excluded (backoff doubles, up to a maximum)
// Successes in half-open are trial requests and probes, except after an exclusion for request
// failures while probes passed: an engine can answer its health path while failing inference,
// so then only real requests prove it healed. The backoff level decays once the replica stayed healthy for max_backoff.
// A load-outlier exclusion lasts a fixed short time and does not escalate the backoff.
#pragma once

#include <cstdint>
#include <string>

#include "core/clock.h"
#include "fleet/replica_state.h"

namespace switchyard::health {

struct HealthSettings {
  int failure_threshold = 5;        // consecutive request failures before a confirming probe
  int hard_failure_threshold = 10;  // consecutive failures that exclude even if probes pass
  int probe_failure_threshold = 2;  // consecutive failed probes that exclude
  int half_open_successes = 2;      // successes in half-open that restore the replica
  TimeNs base_backoff = 1 * kNsPerSec;
  TimeNs max_backoff = 30 * kNsPerSec;
  TimeNs probe_interval = 1 * kNsPerSec;
  TimeNs probe_timeout = 1 * kNsPerSec;
  std::string probe_path = "/health";
  // A healthy replica that answered requests successfully since its last probe round (and has
  // no failure run) is not probed: traffic proved it. Suspect and half-open replicas always are.
  bool skip_probes_with_traffic = true;
  // Routine probes per second across all replicas (0: no budget); confirming and half-open
  // probes are never held back. Over budget, a replica's routine probe waits a round.
  double max_probes_per_second = 500;
  double outlier_factor = 3.0;     // load / capacity above this multiple of the model's median
  double outlier_min_requests = 8;  // ...and at least this many running + waiting requests
  TimeNs outlier_exclusion = 2 * kNsPerSec;
  double outlier_max_fraction = 0.34;  // never exclude more than this share of a model as outliers
  double slow_factor = 3.0;  // time per token above this multiple of same-GPU peers' median
  int64_t slow_min_tokens = 32;  // tokens timed (smoothed) before a replica can be judged slow
};

const char* healthStateName(fleet::HealthState state);
const char* healthReasonName(fleet::HealthReason reason);

struct Transition {
  bool changed = false;
  fleet::HealthState from = fleet::HealthState::kHealthy;
  fleet::HealthState to = fleet::HealthState::kHealthy;
  fleet::HealthReason reason = fleet::HealthReason::kNone;
};

class ReplicaHealth {
 public:
  explicit ReplicaHealth(const HealthSettings& settings) : settings_(&settings) {}

  // Request outcomes as the workers counted them (cumulative totals and the current run of
  // consecutive failures).
  Transition onOutcomes(int64_t successes_total, int64_t failures_total,
                        int64_t consecutive_failures, TimeNs now);
  Transition onProbe(bool ok, TimeNs now);
  Transition onLoadOutlier(TimeNs now);
  Transition onSlowOutlier(TimeNs now);
  // Moves an excluded replica to half-open when its backoff has passed.
  Transition onTick(TimeNs now);

  // True while repeated failures wait for a confirming probe.
  bool wantsConfirmingProbe() const { return suspect_ && state_ == fleet::HealthState::kHealthy; }
  fleet::HealthState state() const { return state_; }
  fleet::HealthReason reason() const { return reason_; }
  TimeNs excludedUntil() const { return excluded_until_; }
  int backoffLevel() const { return backoff_level_; }

 private:
  Transition exclude(fleet::HealthReason reason, TimeNs now, bool escalate);
  Transition become(fleet::HealthState to, fleet::HealthReason reason);

  const HealthSettings* settings_;
  fleet::HealthState state_ = fleet::HealthState::kHealthy;
  fleet::HealthReason reason_ = fleet::HealthReason::kNone;
  TimeNs excluded_until_ = 0;
  int backoff_level_ = 0;
  bool suspect_ = false;
  bool needs_traffic_proof_ = false;  // half-open successes must be real requests
  bool last_probe_ok_ = true;
  TimeNs healthy_since_ = 0;
  int probe_failures_ = 0;
  int half_open_successes_ = 0;
  int64_t seen_successes_ = -1;
  int64_t seen_failures_ = -1;
};

}  // namespace switchyard::health
