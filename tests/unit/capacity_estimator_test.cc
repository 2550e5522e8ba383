#include "fleet/capacity_estimator.h"

#include <gtest/gtest.h>

#include <cmath>

namespace switchyard::fleet {
namespace {

CapacityCounters tokens(int64_t output) {
  CapacityCounters c;
  c.output_tokens = output;
  return c;
}

TEST(CapacityEstimatorTest, UnknownUntilWorkCompletes) {
  CapacityEstimator estimator;
  estimator.observe(0, tokens(0));
  EXPECT_TRUE(std::isnan(estimator.learned().decode));
  estimator.observe(kNsPerSec, tokens(0));
  EXPECT_TRUE(std::isnan(estimator.learned().decode));
  estimator.observe(2 * kNsPerSec, tokens(1000));
  EXPECT_DOUBLE_EQ(estimator.learned().decode, 500.0);  // 1000 tokens over the 2 s window
}

TEST(CapacityEstimatorTest, IdleRefreshesKeepTheEstimate) {
  CapacityEstimator estimator;
  int64_t total = 0;
  for (int s = 0; s <= 30; ++s) {
    estimator.observe(s * kNsPerSec, tokens(total));
    total += 400;
  }
  const double learned = estimator.learned().decode;
  EXPECT_NEAR(learned, 400.0, 1.0);
  for (int s = 31; s <= 120; ++s) estimator.observe(s * kNsPerSec, tokens(total));
  EXPECT_EQ(estimator.learned().decode, learned);  // idle, not slow
}

TEST(CapacityEstimatorTest, SmoothsTowardANewRateWithItsTimeConstant) {
  CapacitySettings settings;
  settings.window = 2 * kNsPerSec;
  settings.time_constant = 10 * kNsPerSec;
  CapacityEstimator estimator(settings);
  int64_t total = 0;
  int s = 0;
  for (; s <= 10; ++s, total += 100) estimator.observe(s * kNsPerSec, tokens(total));
  EXPECT_NEAR(estimator.learned().decode, 100.0, 1e-9);
  // The replica now drains 300 tokens/s. One time constant later the estimate has covered
  // about 1 - 1/e of the step (a little less: the 2 s window lags by a second).
  for (int end = s + 10; s < end; ++s, total += 300) estimator.observe(s * kNsPerSec, tokens(total));
  const double covered = (estimator.learned().decode - 100.0) / 200.0;
  EXPECT_GT(covered, 0.5);
  EXPECT_LT(covered, 0.7);
}

TEST(CapacityEstimatorTest, WindowForgetsOldTraffic) {
  CapacitySettings settings;
  settings.window = 5 * kNsPerSec;
  settings.time_constant = kNsPerSec / 1000;  // nearly no smoothing: see the window alone
  CapacityEstimator estimator(settings);
  int64_t total = 0;
  for (int s = 0; s <= 5; ++s, total += 1000) estimator.observe(s * kNsPerSec, tokens(total));
  for (int s = 6; s <= 20; ++s, total += 10) estimator.observe(s * kNsPerSec, tokens(total));
  EXPECT_NEAR(estimator.learned().decode, 10.0, 1e-6);
}

TEST(CapacityEstimatorTest, TokenlessWorkLearnsInverseLatency) {
  CapacityEstimator estimator;
  CapacityCounters c;
  estimator.observe(0, c);
  c.tokenless_requests = 40;
  c.tokenless_latency_ns = 40 * 50 * kNsPerMs;  // 50 ms each
  estimator.observe(kNsPerSec, c);
  EXPECT_TRUE(estimator.learned().tokenless);
  EXPECT_NEAR(estimator.learned().decode, 20.0, 1e-9);  // 1 / 50 ms
}

TEST(CapacityEstimatorTest, PrefillIsLearnedFromTimeToFirstByte) {
  CapacityEstimator estimator;
  CapacityCounters c;
  estimator.observe(0, c);
  c.output_tokens = 100;
  c.prefill_tokens = 8000;
  c.prefill_ns = 2 * kNsPerSec;
  estimator.observe(kNsPerSec, c);
  EXPECT_NEAR(estimator.learned().prefill, 4000.0, 1e-9);
  EXPECT_NEAR(estimator.learned().decode, 100.0, 1e-9);
}

}  // namespace
}  // namespace switchyard::fleet
