// A key's per-minute budgets (auth/quota_bucket.h) and the client limits
// (admission/client_limits.h): pure arithmetic on atomics with time passed in.
#include <gtest/gtest.h>

#include <thread>
#include <vector>

#include "admission/client_limits.h"
#include "allocation_count.h"
#include "auth/quota_bucket.h"
#include "gateway/auth_stage.h"

namespace switchyard {
namespace {

constexpr TimeNs kT0 = 1'000 * kNsPerSec;

TEST(QuotaBucketTest, AFullBucketHoldsOneMinuteAndRefillsContinuously) {
  auth::QuotaBucket bucket;
  for (int i = 0; i < 60; ++i) {
    const auth::QuotaTake t = bucket.take(kT0, 60, 1);
    ASSERT_TRUE(t.allowed) << i;
    EXPECT_EQ(t.remaining, 59 - i);
  }
  const auth::QuotaTake refused = bucket.take(kT0, 60, 1);
  EXPECT_FALSE(refused.allowed);
  EXPECT_EQ(refused.remaining, 0);
  EXPECT_EQ(refused.retry_after, kNsPerSec);  // one request per second refills
  EXPECT_EQ(refused.reset, 60 * kNsPerSec);
  EXPECT_FALSE(bucket.take(kT0 + kNsPerSec - 1, 60, 1).allowed);
  EXPECT_TRUE(bucket.take(kT0 + kNsPerSec, 60, 1).allowed);
  // Unlimited: always allowed.
  EXPECT_TRUE(bucket.take(kT0, 0, 1'000'000).allowed);
}

TEST(QuotaBucketTest, TokensAreDebitedByEstimateAndSettledByUsage) {
  auth::QuotaBucket bucket;
  EXPECT_EQ(bucket.take(kT0, 1000, 600).remaining, 400);
  EXPECT_FALSE(bucket.take(kT0, 1000, 600).allowed);
  bucket.settle(1000, -500);  // it used 100
  const auth::QuotaTake second = bucket.take(kT0, 1000, 600);
  EXPECT_TRUE(second.allowed);
  EXPECT_EQ(second.remaining, 300);
  // Usage beyond the estimate puts the bucket in debt: nothing until it is paid back.
  bucket.settle(1000, 1300);
  EXPECT_EQ(bucket.peek(kT0, 1000).remaining, 0);
  EXPECT_FALSE(bucket.take(kT0 + 30 * kNsPerSec, 1000, 1).allowed);
  EXPECT_TRUE(bucket.take(kT0 + 61 * kNsPerSec, 1000, 1).allowed);
}

TEST(QuotaBucketTest, ARequestLargerThanTheBudgetPassesOnAFullBucketOnly) {
  auth::QuotaBucket bucket;
  EXPECT_TRUE(bucket.take(kT0, 100, 5000).allowed);
  EXPECT_FALSE(bucket.take(kT0 + 30 * kNsPerSec, 100, 5000).allowed);
  EXPECT_TRUE(bucket.take(kT0 + 60 * kNsPerSec, 100, 5000).allowed);
}

TEST(QuotaBucketTest, EachGatewaysShareWhenDecidingAlone) {
  auth::QuotaBucket bucket;
  int allowed = 0;
  for (int i = 0; i < 100; ++i) allowed += bucket.take(kT0, 60, 1, /*scale=*/3).allowed;
  EXPECT_EQ(allowed, 20);  // 60 per minute over 3 gateways
}

TEST(QuotaBucketTest, ConcurrentTakesNeverExceedTheBudget) {
  auth::QuotaBucket bucket;
  std::atomic<int> allowed{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 1000; ++i) allowed += bucket.take(kT0, 500, 1).allowed;
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(allowed.load(), 500);
}

TEST(QuotaBucketTest, TakeDoesNotAllocate) {
  if (!testing::allocationCounting()) GTEST_SKIP() << "sanitizer build";
  auth::QuotaBucket bucket;
  testing::AllocationScope scope;
  for (int i = 0; i < 100; ++i) bucket.take(kT0 + i, 60, 1);
  bucket.settle(60, -3);
  EXPECT_EQ(scope.count(), 0u);
}

TEST(ResetDurationTest, SpelledAsOpenAiClientsParseIt) {
  auto text = [](TimeNs d) {
    std::string out;
    gateway::appendResetDuration(out, d);
    return out;
  };
  EXPECT_EQ(text(0), "0ms");
  EXPECT_EQ(text(17 * kNsPerMs), "17ms");
  EXPECT_EQ(text(kNsPerSec), "1s");
  EXPECT_EQ(text(1500 * kNsPerMs), "1.5s");
  EXPECT_EQ(text(360 * kNsPerSec), "6m0s");
}

std::array<uint8_t, 16> address(uint8_t last) {
  std::array<uint8_t, 16> a{};
  a[10] = a[11] = 0xFF;
  a[12] = 10;
  a[15] = last;
  return a;
}

TEST(ClientLimitsTest, GatewayAndPerAddressConnectionCaps) {
  admission::ClientLimitSettings settings;
  settings.max_connections = 5;
  settings.max_connections_per_ip = 2;
  admission::ClientLimits limits(settings);
  const int32_t a1 = limits.openConnection(address(1), kT0);
  const int32_t a2 = limits.openConnection(address(1), kT0);
  ASSERT_GE(a1, 0);
  EXPECT_EQ(a1, a2);
  EXPECT_EQ(limits.table().connections(a1), 2);
  EXPECT_EQ(limits.openConnection(address(1), kT0), admission::ClientAddressTable::kRefused);
  EXPECT_EQ(limits.counted(admission::ClientLimit::kAddressConnections), 1u);
  const int32_t b1 = limits.openConnection(address(2), kT0);
  const int32_t b2 = limits.openConnection(address(2), kT0);
  const int32_t c1 = limits.openConnection(address(3), kT0);
  EXPECT_GE(b1, 0);
  EXPECT_GE(b2, 0);
  EXPECT_GE(c1, 0);
  EXPECT_EQ(limits.openConnections(), 5);
  EXPECT_EQ(limits.openConnection(address(4), kT0), admission::ClientAddressTable::kRefused);
  EXPECT_EQ(limits.counted(admission::ClientLimit::kGatewayConnections), 1u);
  limits.closeConnection(a1);
  EXPECT_EQ(limits.openConnections(), 4);
  EXPECT_GE(limits.openConnection(address(1), kT0), 0);
}

TEST(ClientLimitsTest, PerAddressRequestRateWithBurst) {
  admission::ClientLimitSettings settings;
  settings.requests_per_second_per_ip = 10;
  settings.burst_per_ip = 3;
  admission::ClientLimits limits(settings);
  const int32_t a = limits.openConnection(address(1), kT0);
  const int32_t b = limits.openConnection(address(2), kT0);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(limits.admitRequest(a, kT0), 0);
  const TimeNs wait = limits.admitRequest(a, kT0);
  EXPECT_EQ(wait, 100 * kNsPerMs);
  EXPECT_EQ(limits.counted(admission::ClientLimit::kAddressRate), 1u);
  EXPECT_EQ(limits.admitRequest(b, kT0), 0);  // another address has its own
  EXPECT_EQ(limits.admitRequest(a, kT0 + wait), 0);
}

TEST(ClientLimitsTest, AnIdleAddressesSlotIsReusedAndAFullNeighbourhoodLetsThrough) {
  admission::ClientAddressTable table(admission::ClientAddressTable::kProbe);  // 8 slots
  std::vector<int32_t> slots;
  for (uint8_t i = 0; i < 8; ++i) slots.push_back(table.acquire(address(i), 0, kT0));
  for (int32_t s : slots) EXPECT_GE(s, 0);
  EXPECT_EQ(table.acquire(address(100), 0, kT0), admission::ClientAddressTable::kUntracked);
  table.release(slots[3]);
  // The slot of an address with no connection and no rate debt goes to a newcomer.
  EXPECT_EQ(table.acquire(address(100), 0, kT0), slots[3]);
  // One still paying its rate debt keeps its slot.
  EXPECT_EQ(table.tryRequest(slots[5], kT0, 1, 1), 0);
  table.release(slots[5]);
  EXPECT_EQ(table.acquire(address(101), 0, kT0), admission::ClientAddressTable::kUntracked);
  EXPECT_EQ(table.acquire(address(101), 0, kT0 + 2 * kNsPerSec), slots[5]);
}

TEST(ClientLimitsTest, ConcurrentConnectionsNeverExceedTheCap) {
  admission::ClientLimitSettings settings;
  settings.max_connections_per_ip = 50;
  admission::ClientLimits limits(settings);
  // The address's slot exists first (two first connections racing may claim two slots).
  ASSERT_GE(limits.openConnection(address(9), kT0), 0);
  std::atomic<int> open{1};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 100; ++i) {
        if (limits.openConnection(address(9), kT0) >= 0) ++open;
      }
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(open.load(), 50);
}

}  // namespace
}  // namespace switchyard
