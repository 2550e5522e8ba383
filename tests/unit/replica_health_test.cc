#include "health/replica_health.h"

#include <gtest/gtest.h>

namespace switchyard::health {
namespace {

using fleet::HealthReason;
using fleet::HealthState;

class ReplicaHealthTest : public ::testing::Test {
 protected:
  ReplicaHealthTest() : health_(settings_) { health_.onOutcomes(0, 0, 0, 0); }
  // Reports `n` more failures in a row (cumulative counters, as the workers keep them).
  Transition fail(int n, TimeNs now) {
    failures_ += n;
    consecutive_ += n;
    return health_.onOutcomes(successes_, failures_, consecutive_, now);
  }
  Transition succeed(int n, TimeNs now) {
    successes_ += n;
    consecutive_ = 0;
    return health_.onOutcomes(successes_, failures_, consecutive_, now);
  }

  HealthSettings settings_;
  ReplicaHealth health_;
  int64_t successes_ = 0, failures_ = 0, consecutive_ = 0;
};

TEST_F(ReplicaHealthTest, FailuresNeedAConfirmingProbeBeforeExclusion) {
  EXPECT_FALSE(fail(settings_.failure_threshold - 1, 0).changed);
  EXPECT_FALSE(health_.wantsConfirmingProbe());
  EXPECT_FALSE(fail(1, 0).changed);
  EXPECT_TRUE(health_.wantsConfirmingProbe());
  const Transition t = health_.onProbe(false, 10);
  EXPECT_TRUE(t.changed);
  EXPECT_EQ(t.to, HealthState::kExcluded);
  EXPECT_EQ(t.reason, HealthReason::kRequestFailures);
  EXPECT_EQ(health_.excludedUntil(), 10 + settings_.base_backoff);
}

TEST_F(ReplicaHealthTest, OverwhelmingFailuresExcludeEvenWhenProbesPass) {
  fail(settings_.failure_threshold, 0);
  EXPECT_FALSE(health_.onProbe(true, 1).changed);  // the health path answers...
  const Transition t = fail(settings_.hard_failure_threshold - settings_.failure_threshold, 2);
  EXPECT_EQ(t.to, HealthState::kExcluded);  // ...but inference keeps failing
}

TEST_F(ReplicaHealthTest, ClientErrorsAreSuccessesAndResetTheRun) {
  fail(settings_.failure_threshold - 1, 0);
  succeed(1, 1);
  EXPECT_FALSE(fail(settings_.failure_threshold - 1, 2).changed);
  EXPECT_FALSE(health_.wantsConfirmingProbe());
}

TEST_F(ReplicaHealthTest, ProbeFailuresAloneExcludeAReplicaWithoutTraffic) {
  EXPECT_FALSE(health_.onProbe(false, 0).changed);
  const Transition t = health_.onProbe(false, 1);
  EXPECT_EQ(t.to, HealthState::kExcluded);
  EXPECT_EQ(t.reason, HealthReason::kProbeFailures);
  // Backoff over: half-open; two good probes restore it.
  EXPECT_FALSE(health_.onTick(1 + settings_.base_backoff - 1).changed);
  EXPECT_EQ(health_.onTick(1 + settings_.base_backoff).to, HealthState::kHalfOpen);
  EXPECT_FALSE(health_.onProbe(true, 2 * kNsPerSec).changed);
  EXPECT_EQ(health_.onProbe(true, 2 * kNsPerSec).to, HealthState::kHealthy);
}

TEST_F(ReplicaHealthTest, HalfOpenFailureDoublesTheBackoffUpToTheMaximum) {
  fail(settings_.hard_failure_threshold, 0);
  TimeNs now = 0;
  TimeNs expected = settings_.base_backoff;
  for (int round = 0; round < 8; ++round) {
    EXPECT_EQ(health_.excludedUntil() - now, std::min(expected, settings_.max_backoff));
    now = health_.excludedUntil();
    EXPECT_EQ(health_.onTick(now).to, HealthState::kHalfOpen);
    const Transition t = fail(1, now);  // the trial request fails
    EXPECT_EQ(t.to, HealthState::kExcluded);
    EXPECT_EQ(t.reason, HealthReason::kHalfOpenFailure);
    expected *= 2;
  }
}

TEST_F(ReplicaHealthTest, WhenProbesFailedToProbeRecoveryCounts) {
  fail(settings_.failure_threshold, 0);
  health_.onProbe(false, 0);  // confirms: excluded, and the health path shows the failure
  const TimeNs now = health_.excludedUntil();
  health_.onTick(now);
  health_.onProbe(true, now);
  EXPECT_EQ(health_.onProbe(true, now).to, HealthState::kHealthy);
}

TEST_F(ReplicaHealthTest, AfterRequestFailuresOnlyRealRequestsProveRecovery) {
  health_.onProbe(true, 0);
  fail(settings_.hard_failure_threshold, 0);
  const TimeNs now = health_.excludedUntil();
  health_.onTick(now);
  ASSERT_EQ(health_.state(), HealthState::kHalfOpen);
  for (int i = 0; i < 5; ++i) EXPECT_FALSE(health_.onProbe(true, now).changed);
  EXPECT_FALSE(succeed(1, now).changed);
  EXPECT_EQ(succeed(1, now).to, HealthState::kHealthy);
}

TEST_F(ReplicaHealthTest, BackoffDecaysAfterAStablePeriod) {
  fail(settings_.hard_failure_threshold, 0);
  TimeNs now = health_.excludedUntil();
  health_.onTick(now);
  fail(1, now);  // level 2
  now = health_.excludedUntil();
  health_.onTick(now);
  succeed(2, now);
  ASSERT_EQ(health_.state(), HealthState::kHealthy);
  EXPECT_EQ(health_.backoffLevel(), 2);
  health_.onTick(now + settings_.max_backoff);
  EXPECT_EQ(health_.backoffLevel(), 0);
}

TEST_F(ReplicaHealthTest, SlowOutlierExclusionIsShortAndDoesNotEscalate) {
  const Transition t = health_.onSlowOutlier(50);
  EXPECT_EQ(t.to, HealthState::kExcluded);
  EXPECT_EQ(t.reason, HealthReason::kSlowOutlier);
  EXPECT_EQ(health_.excludedUntil(), 50 + settings_.outlier_exclusion);
  EXPECT_EQ(health_.backoffLevel(), 0);
  EXPECT_FALSE(health_.onSlowOutlier(60).changed);  // already out
}

TEST_F(ReplicaHealthTest, LoadOutlierExclusionIsShortAndDoesNotEscalate) {
  const Transition t = health_.onLoadOutlier(100);
  EXPECT_EQ(t.reason, HealthReason::kLoadOutlier);
  EXPECT_EQ(health_.excludedUntil(), 100 + settings_.outlier_exclusion);
  EXPECT_EQ(health_.backoffLevel(), 0);
}

}  // namespace
}  // namespace switchyard::health
