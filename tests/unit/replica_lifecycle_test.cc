// Replica lifecycle in the fleet and the router: draining and not-ready replicas take no new
// requests, are recorded with their reason, never come back through a fallback, and rejoin
// under slow start.
#include <gtest/gtest.h>

#include "allocation_count.h"
#include "fleet/fleet_registry.h"
#include "routing/router.h"
#include "routing/strategy_spec.h"

namespace switchyard {
namespace {

fleet::ModelSpec fleetOf(int n, uint8_t lifecycle_of_first = 0) {
  fleet::ModelSpec model;
  model.name = "m";
  for (int i = 0; i < n; ++i) {
    fleet::ReplicaSpec r{"10.0.0.1:" + std::to_string(9000 + i), {{"gpu", "A100"}}};
    if (i == 0) r.lifecycle = lifecycle_of_first;
    model.replicas.push_back(std::move(r));
  }
  return model;
}

class LifecycleTest : public ::testing::Test {
 protected:
  void apply(const fleet::ModelSpec& model, TimeNs now = 0) {
    registry_.apply({model}, kNsPerSec, "least-request", 1.0, now);
    snapshot_ = registry_.latest();
  }
  const fleet::ModelEntry& model() { return snapshot_->models[0]; }
  routing::Decision decide(std::string_view strategy = "least-request", int preferred = -1,
                           uint32_t sample = 0) {
    EXPECT_EQ(routing::parseStrategySpec(strategy, spec_), routing::SpecError::kNone);
    routing::RouteRequest request{&spec_, 0, {}, {}};
    request.preferred = preferred;
    const_cast<fleet::ModelEntry&>(model()).candidate_sample = sample;
    return routing::route(*snapshot_, model(), request, rng_, scratch_);
  }

  fleet::FleetRegistry registry_;
  std::shared_ptr<const fleet::FleetSnapshot> snapshot_;
  Rng rng_{7};
  routing::RoutingScratch scratch_;
  routing::StrategySpec spec_;
};

TEST_F(LifecycleTest, DrainingReplicaIsExcludedWithItsReason) {
  apply(fleetOf(3, fleet::kTerminating));
  // Even as the least loaded by far, the draining replica gets nothing.
  model().replicas[1].state->counters().running.store(5);
  model().replicas[2].state->counters().running.store(5);
  for (const char* strategy : {"least-request", "random", "round-robin", "load-balance",
                               "least-request-top-k", "least-request:1,least-kv-cache:1"}) {
    for (int i = 0; i < 50; ++i) {
      const routing::Decision d = decide(strategy);
      ASSERT_NE(d.chosen, 0) << strategy;
      ASSERT_GE(d.chosen, 1) << strategy;
      EXPECT_EQ(d.unavailable, 1u);
      ASSERT_NE(d.rowOf(0), nullptr);
      EXPECT_EQ(d.rowOf(0)->excluded, routing::Exclusion::kDraining);
      EXPECT_EQ(routing::exclusionName(d.rowOf(0)->excluded), "draining");
    }
  }
}

TEST_F(LifecycleTest, EveryDrainingReasonExcludesAndNotReadyHasItsOwn) {
  for (const uint8_t flag : {fleet::kTerminating, fleet::kDrainLabel, fleet::kDrainRequested}) {
    apply(fleetOf(2));
    model().replicas[0].state->storeLifecycle(0xFF, flag);
    const routing::Decision d = decide();
    EXPECT_EQ(d.chosen, 1);
    EXPECT_EQ(d.rowOf(0)->excluded, routing::Exclusion::kDraining);
    EXPECT_TRUE(model().replicas[0].state->draining());
    model().replicas[0].state->storeLifecycle(0xFF, 0);
  }
  apply(fleetOf(2, fleet::kNotReady));
  const routing::Decision d = decide();
  EXPECT_EQ(d.chosen, 1);
  EXPECT_EQ(d.rowOf(0)->excluded, routing::Exclusion::kNotReady);
  EXPECT_EQ(routing::exclusionName(routing::Exclusion::kNotReady), "not_ready");
  EXPECT_FALSE(model().replicas[0].state->draining());
}

TEST_F(LifecycleTest, NoFallbackToLeavingReplicasWhenAllAreUnavailable) {
  apply(fleetOf(2, fleet::kTerminating));
  model().replicas[1].state->storeLifecycle(fleet::kDiscoveryFlags, fleet::kNotReady);
  const routing::Decision d = decide();
  EXPECT_EQ(d.chosen, -1);
  EXPECT_EQ(d.unavailable, 2u);
  EXPECT_EQ(d.ready, 2u);
  EXPECT_FALSE(d.health_fallback);
}

TEST_F(LifecycleTest, HealthFallbackNeverReturnsADrainingReplica) {
  apply(fleetOf(3, fleet::kTerminating));
  model().replicas[1].state->storeHealth(fleet::HealthState::kExcluded,
                                         fleet::HealthReason::kProbeFailures);
  model().replicas[2].state->storeHealth(fleet::HealthState::kExcluded,
                                         fleet::HealthReason::kProbeFailures);
  for (int i = 0; i < 50; ++i) {
    const routing::Decision d = decide();
    EXPECT_TRUE(d.health_fallback);
    EXPECT_TRUE(d.chosen == 1 || d.chosen == 2);
    EXPECT_EQ(d.rowOf(0)->excluded, routing::Exclusion::kDraining);
  }
}

TEST_F(LifecycleTest, SessionPinnedToADrainingReplicaIsRoutedElsewhere) {
  apply(fleetOf(3));
  EXPECT_TRUE(decide("least-request", 0).affinity);
  model().replicas[0].state->storeLifecycle(fleet::kDrainRequested, fleet::kDrainRequested);
  const routing::Decision d = decide("least-request", 0);
  EXPECT_FALSE(d.affinity);  // the caller re-pins the session to d.chosen
  EXPECT_NE(d.chosen, 0);
  EXPECT_GE(d.chosen, 1);
}

TEST_F(LifecycleTest, CandidateSamplingExcludesDrainingReplicasToo) {
  fleet::ModelSpec spec = fleetOf(16);
  apply(spec);
  for (int i = 0; i < 8; ++i) {
    model().replicas[i].state->storeLifecycle(fleet::kDrainRequested, fleet::kDrainRequested);
  }
  for (int i = 0; i < 200; ++i) {
    const routing::Decision d = decide("least-request", -1, 4);
    ASSERT_GE(d.chosen, 8);
  }
  // The whole fleet draining but one: a sample that misses it falls back to the whole fleet.
  for (int i = 8; i < 15; ++i) {
    model().replicas[i].state->storeLifecycle(fleet::kDrainRequested, fleet::kDrainRequested);
  }
  for (int i = 0; i < 200; ++i) ASSERT_EQ(decide("least-request", -1, 4).chosen, 15);
}

TEST_F(LifecycleTest, RegistryStoresDiscoveryBitsAndKeepsTheOperatorsDrain) {
  apply(fleetOf(2));
  auto state = model().replicas[0].state;
  state->storeLifecycle(fleet::kDrainRequested, fleet::kDrainRequested);
  fleet::ModelSpec next = fleetOf(2, fleet::kTerminating);
  apply(next, 5 * kNsPerSec);
  EXPECT_EQ(model().replicas[0].state, state);
  EXPECT_EQ(state->lifecycle(), fleet::kTerminating | fleet::kDrainRequested);
  apply(fleetOf(2), 6 * kNsPerSec);
  EXPECT_EQ(state->lifecycle(), fleet::kDrainRequested);
}

TEST_F(LifecycleTest, BackFromNotReadyIsEasedInBySlowStart) {
  apply(fleetOf(2));
  auto state = model().replicas[0].state;
  EXPECT_EQ(state->readySince(), fleet::ReplicaState::kEstablished);
  apply(fleetOf(2, fleet::kNotReady), 10 * kNsPerSec);
  EXPECT_EQ(state->readySince(), fleet::ReplicaState::kEstablished);
  apply(fleetOf(2), 20 * kNsPerSec);
  EXPECT_EQ(state->readySince(), 20 * kNsPerSec);
  EXPECT_EQ(state->lifecycle(), 0);
}

TEST_F(LifecycleTest, EstablishedReplicasJoiningLaterAreNotEasedIn) {
  apply(fleetOf(1));
  fleet::ModelSpec next = fleetOf(3);
  next.replicas[1].established = true;
  apply(next, 7 * kNsPerSec);
  EXPECT_EQ(model().replicas[1].state->readySince(), fleet::ReplicaState::kEstablished);
  EXPECT_EQ(model().replicas[2].state->readySince(), 7 * kNsPerSec);
}

TEST_F(LifecycleTest, ExcludingDrainingReplicasAllocatesNothing) {
  if (!switchyard::testing::allocationCounting()) {
    GTEST_SKIP() << "allocation counting is off in sanitizer builds";
  }
  apply(fleetOf(64));
  for (int i = 0; i < 64; i += 5) {
    model().replicas[i].state->storeLifecycle(fleet::kDrainRequested, fleet::kDrainRequested);
  }
  for (const char* strategy : {"least-request", "load-balance", "least-request-top-k"}) {
    decide(strategy);  // grows the scratch space once
    switchyard::testing::AllocationScope scope;
    for (int i = 0; i < 100; ++i) {
      const routing::Decision d = decide(strategy);
      ASSERT_EQ(d.unavailable, 13u);
    }
    EXPECT_EQ(scope.count(), 0u) << strategy;
  }
}

TEST_F(LifecycleTest, AReplicaBackInGoodStandingIsRoutedAgain) {
  apply(fleetOf(2));
  fleet::ReplicaState& first = *model().replicas[0].state;
  first.storeHealth(fleet::HealthState::kExcluded, fleet::HealthReason::kProbeFailures);
  first.storeLifecycle(fleet::kDrainRequested, fleet::kDrainRequested);
  EXPECT_EQ(decide().rowOf(0)->excluded, routing::Exclusion::kDraining);
  first.storeLifecycle(fleet::kDrainRequested, 0);
  EXPECT_EQ(decide().rowOf(0)->excluded, routing::Exclusion::kUnhealthy);
  first.storeHealth(fleet::HealthState::kHealthy, fleet::HealthReason::kNone);
  model().replicas[1].state->counters().running.store(5);
  const routing::Decision d = decide();
  EXPECT_EQ(d.chosen, 0);
  EXPECT_EQ(d.rowOf(0)->excluded, routing::Exclusion::kNone);
}

TEST(LifecycleNames, NamesAndReasons) {
  EXPECT_EQ(fleet::lifecycleName(0), "active");
  EXPECT_EQ(fleet::lifecycleName(fleet::kNotReady), "not_ready");
  EXPECT_EQ(fleet::lifecycleName(fleet::kNotReady | fleet::kTerminating), "draining");
  std::string out;
  fleet::appendLifecycleReasons(out, fleet::kTerminating | fleet::kDrainRequested);
  EXPECT_EQ(out, R"(["terminating","drain_requested"])");
  out.clear();
  fleet::appendLifecycleReasons(out, 0);
  EXPECT_EQ(out, "[]");
}

}  // namespace
}  // namespace switchyard
