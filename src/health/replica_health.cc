#include "health/replica_health.h"

#include <algorithm>

namespace switchyard::health {

using fleet::HealthReason;
using fleet::HealthState;

const char* healthStateName(HealthState state) {
  switch (state) {
    case HealthState::kHealthy:
      return "healthy";
    case HealthState::kExcluded:
      return "excluded";
    case HealthState::kHalfOpen:
      return "half_open";
  }
  return "unknown";
}

const char* healthReasonName(HealthReason reason) {
  switch (reason) {
    case HealthReason::kNone:
      return "none";
    case HealthReason::kRequestFailures:
      return "request_failures";
    case HealthReason::kProbeFailures:
      return "probe_failures";
    case HealthReason::kLoadOutlier:
      return "load_outlier";
    case HealthReason::kSlowOutlier:
      return "slow_outlier";
    case HealthReason::kHalfOpenFailure:
      return "half_open_failure";
  }
  return "unknown";
}

Transition ReplicaHealth::become(HealthState to, HealthReason reason) {
  Transition t{to != state_, state_, to, reason};
  state_ = to;
  reason_ = reason;
  return t;
}

Transition ReplicaHealth::exclude(HealthReason reason, TimeNs now, bool escalate) {
  TimeNs backoff = settings_->outlier_exclusion;
  if (escalate) {
    backoff = settings_->base_backoff << std::min(backoff_level_, 20);
    backoff = std::min(backoff, settings_->max_backoff);
    backoff_level_ = std::min(backoff_level_ + 1, 20);
  }
  excluded_until_ = now + backoff;
  // Requests failed while the health path answered: only requests can prove a recovery.
  if (reason == HealthReason::kRequestFailures) needs_traffic_proof_ = last_probe_ok_;
  suspect_ = false;
  probe_failures_ = 0;
  half_open_successes_ = 0;
  return become(HealthState::kExcluded, reason);
}

Transition ReplicaHealth::onOutcomes(int64_t successes_total, int64_t failures_total,
                                     int64_t consecutive_failures, TimeNs now) {
  const int64_t new_successes = seen_successes_ < 0 ? 0 : successes_total - seen_successes_;
  const int64_t new_failures = seen_failures_ < 0 ? 0 : failures_total - seen_failures_;
  seen_successes_ = successes_total;
  seen_failures_ = failures_total;
  switch (state_) {
    case HealthState::kHealthy:
      if (consecutive_failures >= settings_->hard_failure_threshold) {
        return exclude(HealthReason::kRequestFailures, now, true);
      }
      // A run of failures makes the replica suspect: a probe must confirm before exclusion.
      suspect_ = consecutive_failures >= settings_->failure_threshold;
      return {};
    case HealthState::kHalfOpen:
      if (new_failures > 0) return exclude(HealthReason::kHalfOpenFailure, now, true);
      half_open_successes_ += static_cast<int>(new_successes);
      if (half_open_successes_ >= settings_->half_open_successes) {
        healthy_since_ = now;
        needs_traffic_proof_ = false;
        return become(HealthState::kHealthy, HealthReason::kNone);
      }
      return {};
    case HealthState::kExcluded:
      return {};
  }
  return {};
}

Transition ReplicaHealth::onProbe(bool ok, TimeNs now) {
  last_probe_ok_ = ok;
  // A failing probe shows the health path reflects the failure, so probes can show recovery.
  if (!ok) needs_traffic_proof_ = false;
  switch (state_) {
    case HealthState::kHealthy:
      if (ok) {
        probe_failures_ = 0;
        return {};
      }
      ++probe_failures_;
      if (suspect_) return exclude(HealthReason::kRequestFailures, now, true);
      if (probe_failures_ >= settings_->probe_failure_threshold) {
        return exclude(HealthReason::kProbeFailures, now, true);
      }
      return {};
    case HealthState::kHalfOpen:
      if (!ok) return exclude(HealthReason::kHalfOpenFailure, now, true);
      if (needs_traffic_proof_) return {};
      if (++half_open_successes_ >= settings_->half_open_successes) {
        healthy_since_ = now;
        return become(HealthState::kHealthy, HealthReason::kNone);
      }
      return {};
    case HealthState::kExcluded:
      return {};
  }
  return {};
}

Transition ReplicaHealth::onLoadOutlier(TimeNs now) {
  if (state_ != HealthState::kHealthy) return {};
  return exclude(HealthReason::kLoadOutlier, now, false);
}

Transition ReplicaHealth::onSlowOutlier(TimeNs now) {
  if (state_ != HealthState::kHealthy) return {};
  // A slow replica still answers: exclude it briefly and let trial requests re-measure it.
  return exclude(HealthReason::kSlowOutlier, now, false);
}

Transition ReplicaHealth::onTick(TimeNs now) {
  if (state_ == HealthState::kHealthy && backoff_level_ > 0 &&
      now - healthy_since_ >= settings_->max_backoff) {
    backoff_level_ = 0;  // stable again: the next exclusion starts from the base backoff
  }
  if (state_ == HealthState::kExcluded && now >= excluded_until_) {
    half_open_successes_ = 0;
    return become(HealthState::kHalfOpen, reason_);
  }
  return {};
}

}  // namespace switchyard::health
