// The gateways' sync of a model whose in-flight limit is leased: what one gateway publishes as
// its in-flight count on a replica, as another reads it, through a real redis-server.
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>

#include "fleet/fleet_registry.h"
#include "gateway/shared_state_sync.h"
#include "redis/state_harness.h"

namespace switchyard::state::testing {
namespace {

constexpr int64_t kLimit = 64;

// One gateway's fleet (one model, one replica, a leased in-flight limit) and its sync.
struct SyncedGateway {
  SyncedGateway(RedisHarness& harness, asio::io_context& io, const std::string& id)
      : backend(harness.gateway(id)) {
    fleet::ModelSpec model;
    model.name = "m1";
    model.limits.max_inflight_per_replica = kLimit;
    model.replicas.push_back(fleet::ReplicaSpec{"r1:8000", {{"gpu", "A100"}}});
    registry.apply({model}, kNsPerSec, "least-request");
    gateway::SharedStateConfig config;
    config.settings = harness.settings();
    config.sync_interval = 50 * kNsPerMs;
    config.liveness_ttl = 10 * kNsPerSec;
    config.worker_count = 1;
    EXPECT_TRUE(gateway::leasesInflightSlots(config, kLimit, 0));
    sync = std::make_unique<gateway::GatewayStateSync>(io, *backend, registry, config);
  }
  fleet::ReplicaState& replica() { return *registry.latest()->models[0].replicas[0].state; }

  std::shared_ptr<SharedStateBackend> backend;
  fleet::FleetRegistry registry;
  std::unique_ptr<gateway::GatewayStateSync> sync;
};

class LeasedCountSyncTest : public ::testing::Test {
 protected:
  // Runs the syncs until `b` reads `expected` as the others' count (at most 5 s); returns what
  // it read last.
  int64_t readBy(SyncedGateway& b, int64_t expected) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (b.replica().remoteRunning() != expected &&
           std::chrono::steady_clock::now() < deadline) {
      io_.restart();
      io_.run_for(std::chrono::milliseconds(20));
    }
    return b.replica().remoteRunning();
  }
  void TearDown() override {
    for (SyncedGateway* g : {a_.get(), b_.get()}) g->sync->stop();
    io_.restart();
    io_.run_for(std::chrono::milliseconds(300));  // cycles in flight finish
  }

  RedisHarness harness_;
  asio::io_context io_;
  std::unique_ptr<SyncedGateway> a_ = std::make_unique<SyncedGateway>(harness_, io_, "gw-a");
  std::unique_ptr<SyncedGateway> b_ = std::make_unique<SyncedGateway>(harness_, io_, "gw-b");
};

TEST_F(LeasedCountSyncTest, RequestsWaitingForASlotLeaseAreNotPublishedAsInFlight) {
  fleet::ReplicaCounters& a = a_->replica().counters();
  a.running.store(5);
  a.awaiting_slot.store(2);  // two of the five wait for growSlots' answer
  a_->sync->start();
  b_->sync->start();
  EXPECT_EQ(readBy(*b_, 3), 3);
  // Granted: both count from now on.
  a.awaiting_slot.store(0);
  EXPECT_EQ(readBy(*b_, 5), 5);
  // Refused: they leave without having reached the replica.
  a.running.store(3);
  EXPECT_EQ(readBy(*b_, 3), 3);
}

}  // namespace
}  // namespace switchyard::state::testing
