#include "fleet/scrape_schedule.h"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

namespace switchyard::fleet {
namespace {

constexpr TimeNs kInterval = 100 * kNsPerMs;

EngineSignals signalsOf(double running, double waiting, double kv) {
  EngineSignals s;
  s.running = running;
  s.waiting = waiting;
  s.kv_usage = kv;
  return s;
}

TEST(ScrapeScheduleTest, MovingOrUnknownSignalsKeepTheInterval) {
  ScrapePolicy policy;
  ScrapeHistory h;
  EXPECT_EQ(scrapePeriod(policy, kInterval, h), kInterval);  // never read
  h.record(true, signalsOf(1, 0, 0.1), policy);
  h.record(true, signalsOf(4, 0, 0.1), policy);
  EXPECT_EQ(scrapePeriod(policy, kInterval, h), kInterval);
  h.record(false, {}, policy);
  EXPECT_EQ(scrapePeriod(policy, kInterval, h), kInterval);
}

TEST(ScrapeScheduleTest, StableReplicasFarFromKvCriticalStretch) {
  ScrapePolicy policy;
  ScrapeHistory h;
  for (int i = 0; i <= policy.stable_after; ++i) h.record(true, signalsOf(2, 0, 0.3), policy);
  EXPECT_EQ(scrapePeriod(policy, kInterval, h), 2 * kInterval);
  // A move of one request resets stability.
  h.record(true, signalsOf(3, 0, 0.3), policy);
  EXPECT_EQ(scrapePeriod(policy, kInterval, h), kInterval);
}

TEST(ScrapeScheduleTest, ReplicasNearKvCriticalAreScrapedMoreOften) {
  ScrapePolicy policy;
  ScrapeHistory h;
  for (int i = 0; i <= policy.stable_after; ++i) h.record(true, signalsOf(40, 0, 0.8), policy);
  EXPECT_EQ(scrapePeriod(policy, kInterval, h), kInterval / 2);  // stable, but hot wins
  EXPECT_EQ(shortestScrapePeriod(policy, kInterval), kInterval / 2);
}

TEST(ScrapeScheduleTest, NotAdaptiveMeansTheInterval) {
  ScrapePolicy policy;
  policy.adaptive = false;
  ScrapeHistory h;
  for (int i = 0; i < 5; ++i) h.record(true, signalsOf(40, 0, 0.95), policy);
  EXPECT_EQ(scrapePeriod(policy, kInterval, h), kInterval);
  EXPECT_EQ(shortestScrapePeriod(policy, kInterval), kInterval);
}

TEST(ScrapeScheduleTest, BudgetLimitsTheRate) {
  ScrapeBudget budget;
  budget.configure(1000, kInterval);  // burst: a tenth of an interval's worth = 10
  TimeNs now = 5 * kNsPerSec;
  int taken = 0;
  for (int i = 0; i < 100; ++i) taken += budget.take(now);
  EXPECT_EQ(taken, 10);
  EXPECT_GT(budget.nextToken(now), now);
  // Over one simulated second at most the rate (plus the burst) goes through.
  taken = 0;
  for (TimeNs t = now; t < now + kNsPerSec; t += 100'000) {
    while (budget.take(t)) ++taken;
  }
  EXPECT_LE(taken, 1000 + 10);
  EXPECT_GE(taken, 990);
}

TEST(ScrapeScheduleTest, NoBudgetNeverRefuses) {
  ScrapeBudget budget;
  budget.configure(0, kInterval);
  for (int i = 0; i < 10000; ++i) ASSERT_TRUE(budget.take(0));
  EXPECT_FALSE(budget.limited());
}

TEST(ScrapeScheduleTest, RendezvousSpreadsAndMovesOnlyTheLeaversShare) {
  std::vector<uint64_t> gateways = {stableHash("gw-a"), stableHash("gw-b"), stableHash("gw-c")};
  std::map<uint64_t, int> share;
  std::vector<uint64_t> owner_before;
  for (int i = 0; i < 3000; ++i) {
    const uint64_t replica = stableHash("10.0.0." + std::to_string(i) + ":8000");
    const int owner = rendezvousOwner(replica, gateways);
    ASSERT_GE(owner, 0);
    ++share[gateways[owner]];
    owner_before.push_back(gateways[owner]);
  }
  for (const auto& [gateway, n] : share) {
    EXPECT_GT(n, 800) << "uneven split";
    EXPECT_LT(n, 1200) << "uneven split";
  }
  // gw-b leaves: only its replicas move.
  std::vector<uint64_t> left = {gateways[0], gateways[2]};
  for (int i = 0; i < 3000; ++i) {
    const uint64_t replica = stableHash("10.0.0." + std::to_string(i) + ":8000");
    const uint64_t now_owner = left[rendezvousOwner(replica, left)];
    if (owner_before[i] != gateways[1]) {
      EXPECT_EQ(now_owner, owner_before[i]);
    }
  }
  EXPECT_EQ(rendezvousOwner(1, {}), -1);
}

TEST(ScrapeScheduleTest, RendezvousIgnoresTheOrderOfTheLiveSet) {
  std::vector<uint64_t> a = {stableHash("x"), stableHash("y"), stableHash("z")};
  std::vector<uint64_t> b = {a[2], a[0], a[1]};
  for (uint64_t r = 0; r < 500; ++r) {
    EXPECT_EQ(a[rendezvousOwner(r, a)], b[rendezvousOwner(r, b)]);
  }
}

}  // namespace
}  // namespace switchyard::fleet
