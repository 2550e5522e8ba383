// In-flight slot leases in Redis: what growSlots grants against the limit across gateways,
// request-by-request counts and leases counted together, the key's budgets in the same call, and
// the leases of gateways (or earlier runs of one) that are gone.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "redis/state_harness.h"

namespace switchyard::state::testing {
namespace {

constexpr TimeNs kTtl = 60 * kNsPerSec;

asio::awaitable<SlotGrant> growOwned(SharedStateClient& client, SlotRequest request,
                                     QuotaRequest quota) {
  if (!quota.key.empty()) request.quota = &quota;
  co_return co_await client.growSlots(request);
}

class SlotLeaseTest : public ::testing::Test {
 protected:
  using Gateway = TestGateway;
  Gateway& gateway(const std::string& id) {
    return *gateways_.emplace_back(makeTestGateway(harness_.gateway(id), io_));
  }
  SlotGrant grow(SharedStateClient& client, int64_t limit, int64_t wanted,
                 QuotaRequest quota = {}) {
    return runAwait(io_, growOwned(client, SlotRequest{"m1", "r1", limit, wanted, kTtl}, quota));
  }
  AdmitResult admit(Gateway& g, int64_t limit) {
    AdmitRequest request{"m1", "r1", limit};
    request.liveness_ttl = kTtl;
    return runAwait(io_, admitOwned(*g.client, request));
  }
  void publish(Gateway& g, int64_t running, TimeNs ttl = kTtl) {
    ReplicaReport r;
    r.model = "m1";
    r.replica = "r1";
    r.running = running;
    r.publish_running = true;
    ASSERT_TRUE(runAwait(io_, g.sync->publish({&r, 1}, ttl)));
  }
  // Fire-and-forget calls are ordered before the next call on the same client.
  void flush(SharedStateClient& client) { runAwait(io_, client.lookupJob("flush")); }

  asio::io_context io_;
  RedisHarness harness_;
  std::vector<std::unique_ptr<Gateway>> gateways_;
};

TEST_F(SlotLeaseTest, GrantsWhatFitsUnderTheLimitAcrossGatewaysAndWorkers) {
  Gateway& a = gateway("a");
  Gateway& b = gateway("b");
  auto a2 = a.backend->makeClient(io_.get_executor());  // a second worker of a
  SlotGrant first = grow(*a.client, 10, 4);
  ASSERT_FALSE(first.degraded);
  EXPECT_EQ(first.granted, 4);
  EXPECT_EQ(first.held, 4);
  EXPECT_EQ(grow(*a2, 10, 3).granted, 3);        // its own field
  EXPECT_EQ(grow(*b.client, 10, 5).granted, 3);  // only 3 left
  const SlotGrant full = grow(*b.client, 10, 1);
  EXPECT_FALSE(full.degraded);
  EXPECT_EQ(full.granted, 0);
  EXPECT_EQ(full.held, 3);
  // Request-by-request admissions see the leases too.
  EXPECT_EQ(admit(b, 10).verdict, AdmitVerdict::kInflightLimit);
  // Slots given back are free again, for anyone.
  a.client->changeSlots("m1", "r1", -4);
  flush(*a.client);
  EXPECT_EQ(admit(b, 10).verdict, AdmitVerdict::kAdmitted);
  // a2 holds 3, b 3 leased and 1 counted: b counts for the larger, 3; 4 are left.
  EXPECT_EQ(grow(*b.client, 10, 8).granted, 4);
}

TEST_F(SlotLeaseTest, AGatewaysCountAndItsLeasesAreNotAddedTogether) {
  Gateway& a = gateway("a");
  Gateway& b = gateway("b");
  // a leases 6 and reports 4 requests in flight within them: it counts for 6, not 10.
  EXPECT_EQ(grow(*a.client, 10, 6).granted, 6);
  publish(a, 4);
  EXPECT_EQ(grow(*b.client, 10, 10).granted, 4);
  b.client->changeSlots("m1", "r1", -4);
  flush(*b.client);
  // a counts 8 (admitted while shared state was away, say): its count is the larger.
  publish(a, 8);
  EXPECT_EQ(grow(*b.client, 10, 10).granted, 2);
}

TEST_F(SlotLeaseTest, TheKeysBudgetsRideAlongAndNothingIsLeasedWhenTheyRefuse) {
  Gateway& a = gateway("a");
  const QuotaRequest quota{"k1", /*rpm=*/1, /*tpm=*/0, /*tokens=*/0};
  const SlotGrant first = grow(*a.client, 10, 2, quota);
  EXPECT_EQ(first.granted, 2);
  EXPECT_EQ(first.quota.verdict, QuotaVerdict::kAdmitted);
  EXPECT_EQ(first.quota.remaining_requests, 0);
  const SlotGrant second = grow(*a.client, 10, 2, quota);
  EXPECT_FALSE(second.degraded);
  EXPECT_EQ(second.granted, 0);
  EXPECT_EQ(second.quota.verdict, QuotaVerdict::kRequestLimit);
  EXPECT_GT(second.quota.retry_after, 0);
  EXPECT_EQ(second.held, 2);  // unchanged
}

TEST_F(SlotLeaseTest, LeasesOfAGatewayThatDiedOrRestartedStopCounting) {
  Gateway& a = gateway("a");
  Gateway& b = gateway("b");
  // a leases everything, with a heartbeat that lapses.
  publish(a, 0, 300 * kNsPerMs);
  SlotRequest request{"m1", "r1", 5, 5, 300 * kNsPerMs};
  EXPECT_EQ(runAwait(io_, growOwned(*a.client, request, {})).granted, 5);
  publish(b, 0);
  EXPECT_EQ(grow(*b.client, 5, 1).granted, 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(400));
  EXPECT_EQ(grow(*b.client, 5, 5).granted, 5);
  b.client->changeSlots("m1", "r1", -5);
  flush(*b.client);

  // c leases 5, then restarts under the same id: its first heartbeat drops the earlier run's
  // leases, which nobody else could ever have given back.
  auto c_old = harness_.gateway("c");
  auto old_client = c_old->makeClient(io_.get_executor());
  EXPECT_EQ(grow(*old_client, 5, 5).granted, 5);
  EXPECT_EQ(grow(*b.client, 5, 1).granted, 0);
  Gateway& c = gateway("c");
  publish(c, 0);
  EXPECT_EQ(grow(*b.client, 5, 1).granted, 1);
}

TEST_F(SlotLeaseTest, ARetiringGatewayTakesItsLeasesWithIt) {
  Gateway& a = gateway("a");
  Gateway& b = gateway("b");
  EXPECT_EQ(grow(*a.client, 4, 4).granted, 4);
  ReplicaReport r;
  r.model = "m1";
  r.replica = "r1";
  ASSERT_TRUE(runAwait(io_, a.sync->retire({&r, 1})));
  EXPECT_EQ(grow(*b.client, 4, 4).granted, 4);
}

}  // namespace
}  // namespace switchyard::state::testing
