#include "routing/router.h"

#include "routing/strategy_spec.h"

#include <gtest/gtest.h>

#include <map>

#include "fleet/fleet_registry.h"

namespace switchyard::routing {
namespace {

class RouterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    fleet::ModelSpec model;
    model.name = "m";
    for (int i = 0; i < 4; ++i) {
      model.replicas.push_back({"10.0.0.1:" + std::to_string(9000 + i), {{"gpu", "A100"}}});
    }
    registry_.apply({model}, kNsPerSec, "least-request");
    snapshot_ = registry_.latest();
  }
  const fleet::ModelEntry& model() { return snapshot_->models[0]; }
  void setRunning(int replica, int64_t running) {
    model().replicas[replica].state->counters().running.store(running);
  }
  Decision decide(std::string_view strategy, int exclude = -1) {
    EXPECT_EQ(parseStrategySpec(strategy, spec_), SpecError::kNone) << strategy;
    const int tried[] = {exclude};
    RouteRequest request{&spec_, 0, exclude >= 0 ? std::span<const int>(tried) : std::span<const int>(), {}};
    return route(*snapshot_, model(), request, rng_, scratch_);
  }

  fleet::FleetRegistry registry_;
  std::shared_ptr<const fleet::FleetSnapshot> snapshot_;
  Rng rng_{1};
  RoutingScratch scratch_;
  StrategySpec spec_;
};

TEST_F(RouterTest, LeastRequestPicksTheFewestInFlight) {
  setRunning(0, 5);
  setRunning(1, 2);
  setRunning(2, 7);
  setRunning(3, 3);
  for (int i = 0; i < 20; ++i) EXPECT_EQ(decide("least-request").chosen, 1);
}

TEST_F(RouterTest, LeastRequestSpreadsTiesEvenly) {
  std::map<int, int> counts;
  for (int i = 0; i < 4000; ++i) ++counts[decide("least-request").chosen];
  ASSERT_EQ(counts.size(), 4u);
  for (const auto& [replica, count] : counts) EXPECT_NEAR(count, 1000, 150) << replica;
}

TEST_F(RouterTest, RoundRobinCyclesThroughEveryReplica) {
  std::vector<int> order;
  for (int i = 0; i < 8; ++i) order.push_back(decide("round-robin").chosen);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(order[i + 4], order[i]);
  std::sort(order.begin(), order.begin() + 4);
  EXPECT_EQ(order, (std::vector<int>{0, 1, 2, 3, order[4], order[5], order[6], order[7]}));
}

TEST_F(RouterTest, DryRunsDoNotMoveTheRoundRobinCursor) {
  const int first = decide("round-robin").chosen;
  StrategySpec spec;
  ASSERT_EQ(parseStrategySpec("round-robin", spec), SpecError::kNone);
  RouteRequest explain{&spec, 0, {}, {}};
  explain.dry_run = true;
  for (int i = 0; i < 3; ++i) route(*snapshot_, model(), explain, rng_, scratch_);
  EXPECT_EQ(decide("round-robin").chosen, (first + 1) % 4);
}

TEST_F(RouterTest, RandomReachesEveryReplica) {
  std::map<int, int> counts;
  for (int i = 0; i < 2000; ++i) ++counts[decide("random").chosen];
  EXPECT_EQ(counts.size(), 4u);
}

TEST_F(RouterTest, ExcludedReplicaIsNeverChosenAndExplained) {
  setRunning(2, 0);
  setRunning(0, 9);
  setRunning(1, 9);
  setRunning(3, 9);
  const Decision d = decide("least-request", 2);
  EXPECT_NE(d.chosen, 2);
  EXPECT_EQ(d.candidates, 3u);
  EXPECT_EQ(d.ready, 4u);
  ASSERT_EQ(d.rows.size(), 4u);
  EXPECT_EQ(d.rows[2].excluded, Exclusion::kFailedThisRequest);
  EXPECT_EQ(exclusionName(d.rows[2].excluded), "failed_this_request");
  EXPECT_EQ(d.rows[1].score, 9);
}

TEST_F(RouterTest, NoCandidateLeftMeansNoChoice) {
  fleet::FleetRegistry registry;
  fleet::ModelSpec solo;
  solo.name = "solo";
  solo.replicas = {{"10.0.0.9:1", {}}};
  registry.apply({solo}, kNsPerSec, "random");
  auto snapshot = registry.latest();
  StrategySpec spec;
  ASSERT_EQ(parseStrategySpec("random", spec), SpecError::kNone);
  const int tried[] = {0};
  RouteRequest request{&spec, 0, tried, {}};
  EXPECT_EQ(route(*snapshot, snapshot->models[0], request, rng_, scratch_).chosen, -1);
}

TEST(PickLowestTest, EmptyAndSingle) {
  Rng rng(3);
  EXPECT_EQ(pickLowest({}, {}, rng), -1);
  const double one[] = {4.0};
  EXPECT_EQ(pickLowest(one, {}, rng), 0);
}

TEST(PickLowestTest, TieBreakDecidesAmongEqualScores) {
  Rng rng(3);
  const double scores[] = {1.0, 0.5, 0.5, 0.5};
  const double tiebreak[] = {0.0, 0.7, 0.2, 0.9};
  for (int i = 0; i < 20; ++i) EXPECT_EQ(pickLowest(scores, tiebreak, rng), 2);
}

TEST(StrategySpecTest, ParsesNamesAndBlends) {
  StrategySpec spec;
  ASSERT_EQ(parseStrategySpec("least-request", spec), SpecError::kNone);
  ASSERT_EQ(spec.count, 1);
  EXPECT_EQ(spec.components[0].weight, 1.0);
  ASSERT_EQ(parseStrategySpec(" least-kv-cache:2, least-request:0.5 ", spec), SpecError::kNone);
  ASSERT_EQ(spec.count, 2);
  EXPECT_EQ(spec.components[0].strategy->name(), "least-kv-cache");
  EXPECT_EQ(spec.components[0].weight, 2.0);
  EXPECT_EQ(spec.components[1].weight, 0.5);
  EXPECT_EQ(spec.text, "least-kv-cache:2, least-request:0.5");

  std::string_view bad;
  EXPECT_EQ(parseStrategySpec("", spec), SpecError::kEmpty);
  EXPECT_EQ(parseStrategySpec("random,", spec), SpecError::kEmpty);
  EXPECT_EQ(parseStrategySpec("random:0", spec), SpecError::kBadWeight);
  EXPECT_EQ(parseStrategySpec("random:-1", spec), SpecError::kBadWeight);
  EXPECT_EQ(parseStrategySpec("random:x", spec), SpecError::kBadWeight);
  EXPECT_EQ(parseStrategySpec("random,random", spec), SpecError::kDuplicate);
  EXPECT_EQ(parseStrategySpec("random,fastest:2", spec, &bad), SpecError::kUnknownStrategy);
  EXPECT_EQ(bad, "fastest");
  EXPECT_EQ(parseStrategySpec("random,round-robin,least-request,least-kv-cache,load-balance",
                              spec),
            SpecError::kTooMany);
}

TEST(StrategyRegistryTest, KnowsTheBuiltInsAndRejectsOthers) {
  for (std::string_view name : strategyNames()) {
    ASSERT_NE(findStrategy(name), nullptr) << name;
    EXPECT_EQ(findStrategy(name)->name(), name);
  }
  EXPECT_EQ(findStrategy("least-latency-magic"), nullptr);
  EXPECT_EQ(findStrategy(""), nullptr);
}

TEST_F(RouterTest, UnhealthyAndSaturatedReplicasAreFilteredWithReasons) {
  model().replicas[0].state->storeHealth(fleet::HealthState::kExcluded,
                                         fleet::HealthReason::kProbeFailures);
  model().replicas[1].state->storeHealth(fleet::HealthState::kHalfOpen,
                                         fleet::HealthReason::kProbeFailures);
  setRunning(1, 1);  // its one trial request is in flight
  for (int i = 0; i < 20; ++i) {
    const Decision d = decide("random");
    EXPECT_TRUE(d.chosen == 2 || d.chosen == 3) << d.chosen;
    EXPECT_EQ(d.rows[0].excluded, Exclusion::kUnhealthy);
    EXPECT_EQ(d.rows[1].excluded, Exclusion::kHalfOpenBusy);
    EXPECT_FALSE(d.health_fallback);
  }
  setRunning(1, 0);  // half-open and idle: it may take the next trial
  std::map<int, int> picks;
  for (int i = 0; i < 300; ++i) ++picks[decide("random").chosen];
  EXPECT_EQ(picks.count(1), 1u);
}

TEST_F(RouterTest, EveryReplicaUnhealthyFallsBackInsteadOfFailing) {
  for (int i = 0; i < 4; ++i) {
    model().replicas[i].state->storeHealth(fleet::HealthState::kExcluded,
                                           fleet::HealthReason::kRequestFailures);
  }
  const Decision d = decide("least-request");
  EXPECT_GE(d.chosen, 0);
  EXPECT_TRUE(d.health_fallback);
  EXPECT_EQ(d.candidates, 4u);
}

TEST(RouterLimitTest, SaturatedReplicasAreNotCandidates) {
  fleet::FleetRegistry registry;
  fleet::ModelSpec spec;
  spec.name = "m";
  spec.limits.max_inflight_per_replica = 2;
  spec.replicas = {{"h:1", {}}, {"h:2", {}}};
  registry.apply({spec}, kNsPerSec, "least-request");
  auto snapshot = registry.latest();
  const fleet::ModelEntry& model = snapshot->models[0];
  model.replicas[0].state->counters().running.store(2);
  model.replicas[1].state->counters().running.store(1);
  StrategySpec strategy;
  ASSERT_EQ(parseStrategySpec("random", strategy), SpecError::kNone);
  Rng rng(5);
  RoutingScratch scratch;
  Decision d = route(*snapshot, model, RouteRequest{&strategy, 0, {}, {}}, rng, scratch);
  EXPECT_EQ(d.chosen, 1);
  EXPECT_EQ(d.rows[0].excluded, Exclusion::kSaturated);
  model.replicas[1].state->counters().running.store(2);
  d = route(*snapshot, model, RouteRequest{&strategy, 0, {}, {}}, rng, scratch);
  EXPECT_EQ(d.chosen, -1);
  EXPECT_EQ(d.saturated, 2u);
}

}  // namespace
}  // namespace switchyard::routing
