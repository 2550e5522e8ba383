#include <gtest/gtest.h>

#include <cmath>

#include "admission/deadline.h"
#include "admission/execution_estimate.h"
#include "fleet/output_length_estimator.h"

namespace switchyard::admission {
namespace {

TEST(RequestDeadlineTest, MillisecondsHeaderIsTheTimeLeft) {
  const RequestDeadline d = parseDeadline("2500", "");
  EXPECT_FALSE(d.malformed);
  EXPECT_EQ(d.remaining, 2500 * kNsPerMs);
  EXPECT_EQ(d.header, kDeadlineMsHeader);
}

TEST(RequestDeadlineTest, TimeoutHeaderTakesSecondsOrADuration) {
  EXPECT_EQ(parseDeadline("", "30").remaining, 30 * kNsPerSec);
  EXPECT_EQ(parseDeadline("", "2.5").remaining, 2500 * kNsPerMs);
  EXPECT_EQ(parseDeadline("", "1500ms").remaining, 1500 * kNsPerMs);
  EXPECT_EQ(parseDeadline("", "1m30s").remaining, 90 * kNsPerSec);
  EXPECT_EQ(parseDeadline("", "").remaining, -1);  // none given
}

TEST(RequestDeadlineTest, TheMillisecondsHeaderWinsOverTheTimeout) {
  EXPECT_EQ(parseDeadline("100", "30").remaining, 100 * kNsPerMs);
}

TEST(RequestDeadlineTest, MalformedValuesAreFlaggedNotGuessed) {
  for (const char* bad : {"-1", "abc", "1.5", "10ms", " 5", "99999999999999999999"}) {
    const RequestDeadline d = parseDeadline(bad, "");
    EXPECT_TRUE(d.malformed) << bad;
    EXPECT_EQ(d.header, kDeadlineMsHeader);
  }
  for (const char* bad : {"-3", "soon", "1x", "nan"}) {
    EXPECT_TRUE(parseDeadline("", bad).malformed) << bad;
  }
}

TEST(ExecutionEstimateTest, UnknownWithoutAnythingLearned) {
  const ExecutionEstimate e = estimateExecution({}, {}, 100, 50, 1);
  EXPECT_EQ(e.total, -1);
}

TEST(ExecutionEstimateTest, FlatCurveIsPrefillPlusOutputAtTheStreamSpeed) {
  fleet::LearnedCapacity own;
  own.decode = 640;    // tokens/s at 64 streams: 10 tokens/s per stream
  own.prefill = 1000;  // prompt tokens/s
  own.slowdown = 0;
  const ExecutionEstimate e = estimateExecution(own, {}, 500, 20, 8);
  EXPECT_NEAR(static_cast<double>(e.prefill) / 1e9, 0.5, 1e-6);
  EXPECT_NEAR(static_cast<double>(e.time_per_token) / 1e9, 0.1, 1e-6);
  EXPECT_NEAR(static_cast<double>(e.total) / 1e9, 0.5 + 20 * 0.1, 1e-6);
}

TEST(ExecutionEstimateTest, TimePerTokenGrowsAlongTheBatchingCurve) {
  fleet::LearnedCapacity own;
  own.decode = 640;
  own.slowdown = 0.05;
  const double light = static_cast<double>(estimateExecution(own, {}, 0, 1, 1).time_per_token);
  const double heavy = static_cast<double>(estimateExecution(own, {}, 0, 1, 64).time_per_token);
  EXPECT_NEAR(heavy, 0.1e9, 1e3);  // at the reference concurrency: n_ref / decode
  EXPECT_NEAR(heavy / light, (1 + 0.05 * 64) / (1 + 0.05 * 1), 1e-6);
}

TEST(ExecutionEstimateTest, AReplicaWithoutAnEstimateUsesTheModelsMeans) {
  fleet::LearnedMeans means;
  means.decode = 320;
  means.slowdown = 0;
  const ExecutionEstimate e = estimateExecution({}, means, 0, 10, 4);
  EXPECT_NEAR(static_cast<double>(e.total) / 1e9, 10 * 0.2, 1e-6);
}

TEST(OutputLengthEstimatorTest, LearnsPerPromptSizeAndFallsBack) {
  fleet::OutputLengthEstimator estimator;
  EXPECT_EQ(estimator.estimate(100, 256), 256);
  for (int i = 0; i < 200; ++i) estimator.observe(100, 40);
  EXPECT_NEAR(estimator.estimate(100, 256), 40, 1e-6);
  EXPECT_NEAR(estimator.estimate(120, 256), 40, 1e-6);  // same log2 bucket
  // Another bucket without data: the model's overall mean, not the fallback.
  EXPECT_NEAR(estimator.estimate(5000, 256), 40, 1e-6);
  for (int i = 0; i < 400; ++i) estimator.observe(5000, 8);
  EXPECT_NEAR(estimator.estimate(5000, 256), 8, 0.01);
  EXPECT_NEAR(estimator.estimate(100, 256), 40, 1e-6);
  estimator.observe(100, 0);  // nothing produced: no information
  EXPECT_NEAR(estimator.estimate(100, 256), 40, 1e-6);
}

}  // namespace
}  // namespace switchyard::admission
