#include "fleet/capacity_estimator.h"

#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <memory>
#include <vector>

#include "fleet/capacity_tracker.h"

namespace switchyard::fleet {
namespace {

// A continuous-batching replica whose decode step takes a + b·n seconds at n streams: every
// stream gets one token per step. Advances the gateway-side counters by `seconds` of serving at
// concurrency n, as the gateway would count them.
struct BatchingReplica {
  double a;  // seconds per step at no load
  double b;  // extra seconds per step per stream
  CapacityCounters counters;
  bool counts_concurrency = true;  // the gateway's token_concurrency (false: a source without)

  double secondsPerToken(double n) const { return a + b * n; }
  double throughput(double n) const { return n / secondsPerToken(n); }
  void serve(double n, double seconds) {
    const auto tokens = static_cast<int64_t>(std::llround(throughput(n) * seconds));
    counters.output_tokens += tokens;
    counters.timed_tokens += tokens;
    counters.token_time_ns +=
        static_cast<int64_t>(std::llround(tokens * secondsPerToken(n) * kNsPerSec));
    if (counts_concurrency) {
      counters.token_concurrency += static_cast<int64_t>(std::llround(tokens * 2 * n));
    }
  }
};

constexpr BatchingReplica kL20{0.0215, 0.000274, {}};   // emulated L20, llama2-7b
constexpr BatchingReplica kA100{0.0103, 0.000116, {}};  // emulated A100-80GB

// Runs `seconds` of one-second refreshes from second `from` (observing second 0 first when
// from is 0). concurrency(s) is the in-flight count sampled at second s; between two samples
// the replica serves at their mean (concurrency changes gradually, as in-flight counts do).
template <typename Concurrency>
void run(CapacityEstimator& estimator, BatchingReplica& replica, int from, int seconds,
         Concurrency concurrency) {
  if (from == 0) estimator.observe(0, replica.counters, concurrency(0));
  for (int s = from; s < from + seconds; ++s) {
    replica.serve(0.5 * (concurrency(s) + concurrency(s + 1)), 1.0);
    estimator.observe((s + 1) * kNsPerSec, replica.counters, concurrency(s + 1));
  }
}

// Concurrency swinging smoothly between lo and hi with a 20 s period.
auto swing(double lo, double hi) {
  return [lo, hi](int s) {
    return lo + (hi - lo) * 0.5 * (1 - std::cos(2 * 3.14159265358979 * s / 20));
  };
}

TEST(CapacityEstimatorTest, UnknownUntilWorkCompletes) {
  CapacityEstimator estimator;
  CapacityCounters c;
  estimator.observe(0, c, 0);
  EXPECT_TRUE(std::isnan(estimator.learned().decode));
  estimator.observe(kNsPerSec, c, 0);
  EXPECT_TRUE(std::isnan(estimator.learned().decode));
  c.output_tokens = c.timed_tokens = 1000;
  c.token_time_ns = 1000 * 20 * kNsPerMs;  // 20 ms per token
  estimator.observe(2 * kNsPerSec, c, 10);
  // One point: no slope can be fitted, so 64 streams at the measured 20 ms per token.
  EXPECT_NEAR(estimator.learned().decode, 64 / 0.020, 1e-6);
}

TEST(CapacityEstimatorTest, TrafficShareDoesNotScaleTheEstimate) {
  // The feedback this estimator exists to break: the same GPU given 3 or 24 streams (8 times the
  // traffic) must not be learned 8 times faster. Concurrency wobbles a little, as Poisson
  // arrivals make it do.
  BatchingReplica starved = kL20, busy = kL20;
  CapacityEstimator a, b;
  run(a, starved, 0, 120, swing(3, 5));
  run(b, busy, 0, 120, swing(23, 25));
  const double output_ratio = busy.throughput(24) / starved.throughput(4);
  EXPECT_GT(output_ratio, 4.5);  // what the observed output rate would have learned
  const double learned_ratio = b.learned().decode / a.learned().decode;
  EXPECT_GT(learned_ratio, 0.75);
  EXPECT_LT(learned_ratio, 1.25);
}

TEST(CapacityEstimatorTest, FitRecoversTheBatchingCurveAndTheHardwareRatio) {
  // With concurrency varying over the window the slope is fitted and the estimate is the
  // throughput at the reference concurrency (64), whatever concurrency the replica was kept at.
  BatchingReplica l20 = kL20, a100 = kA100;
  CapacityEstimator slow, fast;
  run(slow, l20, 0, 120, swing(4, 20));
  run(fast, a100, 0, 120, swing(20, 36));
  EXPECT_NEAR(slow.learned().decode, kL20.throughput(64), 0.06 * kL20.throughput(64));
  EXPECT_NEAR(fast.learned().decode, kA100.throughput(64), 0.06 * kA100.throughput(64));
  EXPECT_NEAR(slow.fit().slope, kL20.b, 0.1 * kL20.b);
  const double true_ratio = kA100.throughput(64) / kL20.throughput(64);
  EXPECT_NEAR(fast.learned().decode / slow.learned().decode, true_ratio, 0.1 * true_ratio);
  // The curve's shape: t(n) = a·(1 + slowdown·n).
  EXPECT_NEAR(slow.learned().slowdown, kL20.b / kL20.a, 0.15 * kL20.b / kL20.a);
  EXPECT_NEAR(fast.learned().slowdown, kA100.b / kA100.a, 0.15 * kA100.b / kA100.a);
}

TEST(CapacityEstimatorTest, EachResponseIsPairedWithTheLoadItSaw) {
  // The sampled in-flight count says nothing here (constant 12), but the responses themselves
  // report the concurrency they were served at: the curve is still recovered. Without that
  // count (a source that does not sum it) the samples are all there is: a flat fit.
  BatchingReplica counted = kL20, uncounted = kL20;
  uncounted.counts_concurrency = false;
  CapacityEstimator with, without;
  const auto load = swing(4, 28);
  const auto sampled = [](int) { return 12.0; };
  for (int s = 0; s < 120; ++s) {
    if (s == 0) {
      with.observe(0, counted.counters, sampled(0));
      without.observe(0, uncounted.counters, sampled(0));
    }
    counted.serve(0.5 * (load(s) + load(s + 1)), 1.0);
    uncounted.serve(0.5 * (load(s) + load(s + 1)), 1.0);
    with.observe((s + 1) * kNsPerSec, counted.counters, sampled(s + 1));
    without.observe((s + 1) * kNsPerSec, uncounted.counters, sampled(s + 1));
  }
  EXPECT_NEAR(with.learned().slowdown, kL20.b / kL20.a, 0.15 * kL20.b / kL20.a);
  EXPECT_NEAR(with.learned().decode, kL20.throughput(64), 0.06 * kL20.throughput(64));
  EXPECT_EQ(without.learned().slowdown, 0.0);
}

TEST(CapacityEstimatorTest, TokenlessWorkHasNoCurve) {
  CapacityEstimator estimator;
  CapacityCounters c;
  estimator.observe(0, c, 1);
  c.tokenless_requests = 10;
  c.tokenless_latency_ns = 10 * 50 * kNsPerMs;
  estimator.observe(kNsPerSec, c, 1);
  EXPECT_TRUE(estimator.learned().tokenless);
  EXPECT_TRUE(std::isnan(estimator.learned().slowdown));
}

TEST(CapacityEstimatorTest, IdleRefreshesKeepTheEstimate) {
  BatchingReplica replica = kA100;
  CapacityEstimator estimator;
  run(estimator, replica, 0, 30, [](int) { return 8.0; });
  const double learned = estimator.learned().decode;
  EXPECT_NEAR(learned, 64 / replica.secondsPerToken(8), 1.0);
  for (int s = 31; s <= 120; ++s) estimator.observe(s * kNsPerSec, replica.counters, 0);
  EXPECT_EQ(estimator.learned().decode, learned);  // idle, not slow
}

TEST(CapacityEstimatorTest, SmoothsTowardANewSpeedWithItsTimeConstant) {
  CapacitySettings settings;
  settings.window = 2 * kNsPerSec;
  settings.time_constant = 10 * kNsPerSec;
  CapacityEstimator estimator(settings);
  BatchingReplica before{0.030, 0, {}};
  run(estimator, before, 0, 10, [](int) { return 6.0; });
  const double slow = 64 / 0.030;
  EXPECT_NEAR(estimator.learned().decode, slow, 1e-6 * slow);
  // The replica now runs three times faster per token. One time constant later the estimate has
  // covered about 1 - 1/e of the step (a little less: the 2 s window lags by a second).
  BatchingReplica after{0.010, 0, before.counters};
  run(estimator, after, 10, 10, [](int) { return 6.0; });
  const double covered = (estimator.learned().decode - slow) / (3 * slow - slow);
  EXPECT_GT(covered, 0.5);
  EXPECT_LT(covered, 0.7);
}

TEST(CapacityEstimatorTest, WindowForgetsOldTraffic) {
  CapacitySettings settings;
  settings.window = 5 * kNsPerSec;
  settings.time_constant = kNsPerSec / 1000;  // nearly no smoothing: see the window alone
  CapacityEstimator estimator(settings);
  BatchingReplica fast{0.010, 0, {}};
  run(estimator, fast, 0, 6, [](int) { return 4.0; });
  BatchingReplica slow{0.100, 0, fast.counters};
  run(estimator, slow, 6, 15, [](int) { return 4.0; });
  EXPECT_NEAR(estimator.learned().decode, 64 / 0.100, 1e-3);
}

TEST(CapacityEstimatorTest, TheWindowsFitMatchesARefitFromScratchAfterManyTurnovers) {
  // The fit is kept from running sums as refreshes enter and leave the window; after ten
  // windows of a swinging load (and an idle stretch that empties the window's points), it
  // equals a two-pass fit of the window's own points.
  CapacitySettings settings;
  settings.window = 30 * kNsPerSec;
  CapacityEstimator estimator(settings);
  BatchingReplica replica = kL20;
  std::vector<CapacityCounters> history{replica.counters};
  const auto load = swing(3, 40);
  estimator.observe(0, replica.counters, load(0));
  for (int s = 0; s < 300; ++s) {
    if (s < 100 || s >= 140) replica.serve(0.5 * (load(s) + load(s + 1)), 1.0);
    estimator.observe((s + 1) * kNsPerSec, replica.counters, load(s + 1));
    history.push_back(replica.counters);
  }
  double w_sum = 0, n_sum = 0, t_sum = 0;
  std::vector<std::array<double, 3>> points;  // w, n, t of the last 30 one-second intervals
  for (size_t j = history.size() - 30; j < history.size(); ++j) {
    const CapacityCounters& a = history[j - 1];
    const CapacityCounters& b = history[j];
    const double w = static_cast<double>(b.timed_tokens - a.timed_tokens);
    const double t = static_cast<double>(b.token_time_ns - a.token_time_ns) / kNsPerSec / w;
    const double n = 0.5 * static_cast<double>(b.token_concurrency - a.token_concurrency) / w;
    points.push_back({w, n, t});
    w_sum += w;
    n_sum += w * n;
    t_sum += w * t;
  }
  const double n_mean = n_sum / w_sum, t_mean = t_sum / w_sum;
  double s_nn = 0, s_nt = 0;
  for (const auto& [w, n, t] : points) {
    s_nn += w * (n - n_mean) * (n - n_mean);
    s_nt += w * (n - n_mean) * (t - t_mean);
  }
  const double slope = s_nt / (s_nn + w_sum);  // the ridge: one stream² per unit of weight
  EXPECT_NEAR(estimator.fit().mean_concurrency, n_mean, 1e-9 * n_mean);
  EXPECT_NEAR(estimator.fit().seconds_per_token, t_mean, 1e-9 * t_mean);
  EXPECT_NEAR(estimator.fit().slope, slope, 1e-9 * slope);
  EXPECT_GT(slope, 0);
}

TEST(CapacityEstimatorTest, WithoutTokenTimesTheOutputRateIsTheFallback) {
  // A counter source that does not sum per-token times: the seed's output tokens/s.
  CapacityEstimator estimator;
  CapacityCounters c;
  estimator.observe(0, c);
  c.output_tokens = 1000;
  estimator.observe(2 * kNsPerSec, c);
  EXPECT_DOUBLE_EQ(estimator.learned().decode, 500.0);
}

TEST(CapacityEstimatorTest, CounterGoingBackwardsRestartsTheWindowAndKeepsTheEstimate) {
  BatchingReplica replica = kL20;
  CapacityEstimator estimator;
  run(estimator, replica, 0, 10, [](int) { return 10.0; });
  const double learned = estimator.learned().decode;
  // A summed source lost a gateway's contribution: every counter drops.
  CapacityCounters dropped = replica.counters;
  dropped.output_tokens /= 2;
  dropped.timed_tokens /= 2;
  dropped.token_time_ns /= 2;
  estimator.observe(11 * kNsPerSec, dropped, 10);
  EXPECT_EQ(estimator.learned().decode, learned);
  replica.counters = dropped;
  run(estimator, replica, 11, 5, [](int) { return 10.0; });
  EXPECT_NEAR(estimator.learned().decode, learned, 1e-6 * learned);  // same speed, no jump
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
}

TEST(CapacityTrackerTest, SamplesTheConcurrencyAcrossGatewaysAndAcceptsSummedCounters) {
  // This gateway keeps one request on the replica; the other gateways' share varies. The fit
  // must see the replica's total concurrency, or it would find no slope and take the per-stream
  // speed at ~10 streams for the speed at 64.
  auto replica = std::make_shared<ReplicaState>("a", "10.0.0.1", 8000);
  std::vector<std::shared_ptr<ReplicaState>> replicas{replica};
  CapacityTracker tracker;
  BatchingReplica engine = kL20;
  const auto concurrency = [](int s) { return 2 * std::lround(swing(2, 10)(s)); };
  replica->counters().running.store(1);
  replica->storeRemoteRunning(concurrency(0) - 1);
  tracker.refresh(replicas, 0);
  EXPECT_TRUE(std::isnan(replica->capacity().decode));
  for (int s = 0; s < 60; ++s) {
    replica->storeRemoteRunning(concurrency(s + 1) - 1);
    engine.serve(0.5 * static_cast<double>(concurrency(s) + concurrency(s + 1)), 1.0);
    replica->counters().output_tokens_total.store(engine.counters.output_tokens);
    replica->counters().timed_tokens_total.store(engine.counters.timed_tokens);
    replica->counters().token_time_ns_total.store(engine.counters.token_time_ns);
    tracker.refresh(replicas, (s + 1) * kNsPerSec);
  }
  const double learned = replica->capacity().decode;
  EXPECT_NEAR(learned, kL20.throughput(64), 0.06 * kL20.throughput(64));

  // Counters summed over two gateways that each saw the same traffic: twice the tokens at the
  // same time per token. The speed, and so the estimate, is unchanged.
  CapacityTracker summed_tracker;
  BatchingReplica twice = kL20;
  for (int s = 0; s <= 60; ++s) {
    replica->storeRemoteRunning(concurrency(s) - 1);
    if (s > 0) twice.serve(0.5 * static_cast<double>(concurrency(s - 1) + concurrency(s)), 1.0);
    CapacityCounters sum = twice.counters;
    sum.output_tokens *= 2;
    sum.timed_tokens *= 2;
    sum.token_time_ns *= 2;
    sum.token_concurrency *= 2;
    summed_tracker.refresh(replicas, {sum}, s * kNsPerSec);
  }
  EXPECT_NEAR(replica->capacity().decode, learned, 0.02 * learned);
}

}  // namespace
}  // namespace switchyard::fleet
