#include <gtest/gtest.h>

#include <thread>
#include <vector>

#include "admission/retry_budget.h"
#include "core/gcra.h"

namespace switchyard {
namespace {

TEST(AtomicGcraTest, AdmitsTheConfiguredRateOverTime) {
  AtomicGcra limiter;
  limiter.configure(100, 1);  // 100/s, no burst
  int admitted = 0;
  // Offer 1000 requests/s for 10 s of simulated time.
  for (TimeNs t = 0; t < 10 * kNsPerSec; t += kNsPerMs) admitted += limiter.tryAcquire(t) == 0;
  EXPECT_NEAR(admitted, 1000, 10);
}

TEST(AtomicGcraTest, BurstThenRetryAfter) {
  AtomicGcra limiter;
  limiter.configure(10, 5);
  for (int i = 0; i < 5; ++i) EXPECT_EQ(limiter.tryAcquire(0), 0) << i;
  const TimeNs wait = limiter.tryAcquire(0);
  EXPECT_GT(wait, 0);
  EXPECT_LE(wait, kNsPerSec / 10);
  EXPECT_EQ(limiter.tryAcquire(wait), 0);
}

TEST(AtomicGcraTest, UnlimitedAndRescaled) {
  AtomicGcra limiter;
  for (int i = 0; i < 1000; ++i) EXPECT_EQ(limiter.tryAcquire(0), 0);
  limiter.configure(2, 1);
  EXPECT_DOUBLE_EQ(limiter.rate(), 2.0);
  limiter.configure(0, 0);
  EXPECT_EQ(limiter.tryAcquire(0), 0);
}

TEST(AtomicGcraTest, ConcurrentWorkersNeverExceedTheLimit) {
  AtomicGcra limiter;
  limiter.configure(1000, 1);
  std::atomic<int> admitted{0};
  std::vector<std::thread> threads;
  for (int w = 0; w < 4; ++w) {
    threads.emplace_back([&] {
      // Every thread offers the same simulated second.
      for (TimeNs t = 0; t < kNsPerSec; t += kNsPerSec / 5000) {
        admitted += limiter.tryAcquire(t) == 0;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_LE(admitted.load(), 1001);
  EXPECT_GE(admitted.load(), 990);
}

TEST(RetryBudgetTest, RetriesAreAFractionOfRequests) {
  admission::RetryBudget budget(0.2, 0, 10);
  TimeNs now = 1;
  while (budget.trySpend(now)) {
  }  // drain the initial allowance
  int retries = 0;
  for (int i = 0; i < 100; ++i) {
    budget.onRequest(now);
    retries += budget.trySpend(now);
  }
  EXPECT_NEAR(retries, 20, 1);
}

TEST(RetryBudgetTest, AFloorAccruesWithTime) {
  admission::RetryBudget budget(0, 5, 10);
  TimeNs now = 1;
  while (budget.trySpend(now)) {
  }
  EXPECT_FALSE(budget.trySpend(now));
  now += kNsPerSec;
  int retries = 0;
  while (budget.trySpend(now)) ++retries;
  EXPECT_EQ(retries, 5);
}

}  // namespace
}  // namespace switchyard
