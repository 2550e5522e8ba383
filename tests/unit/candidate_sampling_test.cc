// Candidate sampling: a decision filters and scores a random sample of the fleet, never less
// safely than scoring all of it.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>
#include <vector>

#include "fleet/fleet_registry.h"
#include "observe/decision_log.h"
#include "routing/router.h"

namespace switchyard::routing {
namespace {

class CandidateSamplingTest : public ::testing::Test {
 protected:
  void build(int replicas, uint32_t sample) {
    fleet::ModelSpec model;
    model.name = "m";
    model.candidate_sample = sample;
    for (int i = 0; i < replicas; ++i) {
      model.replicas.push_back({"10.1.0.1:" + std::to_string(9000 + i), {}});
    }
    registry_.apply({model}, kNsPerSec, "least-request");
    snapshot_ = registry_.latest();
  }
  const fleet::ModelEntry& model() const { return snapshot_->models[0]; }
  fleet::ReplicaState& replica(int i) { return *model().replicas[i].state; }
  Decision decide(std::string_view strategy, int preferred = -1, bool dry_run = false) {
    EXPECT_EQ(parseStrategySpec(strategy, spec_), SpecError::kNone);
    RouteRequest request{&spec_, 0, {}, {}};
    request.preferred = preferred;
    request.dry_run = dry_run;
    fleet::refreshLearnedMeans(model());
    return route(*snapshot_, model(), request, rng_, scratch_);
  }
  static std::set<uint32_t> replicasOf(const Decision& d) {
    std::set<uint32_t> out;
    for (const CandidateRow& row : d.rows) out.insert(row.replica_index);
    return out;
  }

  // One worker's routing state...
  StrategySpec spec_;
  RoutingScratch scratch_;
  Rng rng_{17};
  // ...over the fleet.
  fleet::FleetRegistry registry_;
  std::shared_ptr<const fleet::FleetSnapshot> snapshot_;
};

TEST_F(CandidateSamplingTest, ScoresOnlyTheSampleAndPicksItsBest) {
  build(64, 8);
  for (int i = 0; i < 64; ++i) replica(i).counters().running.store(1 + (i * 37) % 50);
  for (int n = 0; n < 200; ++n) {
    const Decision d = decide("least-request");
    ASSERT_EQ(d.sampled, 8u);
    ASSERT_EQ(d.rows.size(), 8u);
    EXPECT_EQ(replicasOf(d).size(), 8u) << "drawn without replacement";
    ASSERT_NE(d.rowOf(d.chosen), nullptr) << "the chosen replica is one of the sample";
    for (const CandidateRow& row : d.rows) {
      EXPECT_LE(replica(d.chosen).globalRunning(), replica(row.replica_index).globalRunning());
    }
  }
}

TEST_F(CandidateSamplingTest, EveryReplicaIsDrawnAsOftenAsAnother) {
  build(64, 8);
  std::map<uint32_t, int> drawn;
  for (int n = 0; n < 8000; ++n) {
    for (uint32_t r : replicasOf(decide("least-request"))) ++drawn[r];
  }
  ASSERT_EQ(drawn.size(), 64u);
  for (const auto& [r, count] : drawn) EXPECT_NEAR(count, 1000, 150) << "replica " << r;
}

// The best of a 16-replica sample is almost always among the fleet's least-loaded quarter
// (each draw misses it with probability 3/4: 0.75^16 ≈ 1 %).
TEST_F(CandidateSamplingTest, LoadBalanceOnASampleStillFindsALightlyLoadedReplica) {
  build(256, 16);
  Rng draw(5);
  std::vector<int64_t> loads(256);
  for (int i = 0; i < 256; ++i) {
    loads[i] = draw.below(100);
    replica(i).counters().running.store(loads[i]);
    replica(i).storeCapacity({1000, fleet::EngineSignals::kUnknown, false, 1.0 / 40});
    fleet::EngineSignals s;
    s.kv_usage = 0.1;
    replica(i).storeSignals(s, 0);
  }
  std::vector<int64_t> sorted = loads;
  std::sort(sorted.begin(), sorted.end());
  const int64_t quarter = sorted[256 / 4];
  int light = 0;
  for (int n = 0; n < 1000; ++n) light += loads[decide("load-balance").chosen] <= quarter;
  EXPECT_GE(light, 950);
}

TEST_F(CandidateSamplingTest, ASampleWithNoCandidateFallsBackToTheWholeFleet) {
  build(64, 4);
  for (int i = 0; i < 64; ++i) {
    if (i != 37) replica(i).storeHealth(fleet::HealthState::kExcluded,
                                        fleet::HealthReason::kProbeFailures);
  }
  for (int n = 0; n < 100; ++n) {
    const Decision d = decide("least-request");
    EXPECT_EQ(d.chosen, 37);
    EXPECT_FALSE(d.health_fallback) << "a healthy replica exists outside the sample";
    if (d.sampled == 0) {
      EXPECT_EQ(d.rows.size(), 64u);
    }
  }
  replica(37).storeHealth(fleet::HealthState::kExcluded, fleet::HealthReason::kProbeFailures);
  const Decision all_unhealthy = decide("least-request");
  EXPECT_GE(all_unhealthy.chosen, 0) << "protection never turns into an outage";
  EXPECT_TRUE(all_unhealthy.health_fallback);
  EXPECT_EQ(all_unhealthy.sampled, 0u);
}

TEST_F(CandidateSamplingTest, ASessionsPinnedReplicaIsKeptWhateverTheDraw) {
  build(64, 4);
  for (int n = 0; n < 100; ++n) {
    const Decision d = decide("load-balance", 5);
    EXPECT_EQ(d.chosen, 5);
    EXPECT_TRUE(d.affinity);
    EXPECT_GE(d.sampled, 4u);
  }
}

TEST_F(CandidateSamplingTest, SmallFleetsRoundRobinAndExplanationsSeeEveryReplica) {
  build(8, 8);
  EXPECT_EQ(decide("least-request").sampled, 0u);
  build(64, 8);
  EXPECT_EQ(decide("round-robin").sampled, 0u);
  EXPECT_EQ(decide("round-robin").rows.size(), 64u);
  const Decision explained = decide("load-balance", -1, /*dry_run=*/true);
  EXPECT_EQ(explained.sampled, 0u);
  EXPECT_EQ(explained.rows.size(), 64u);
}

TEST_F(CandidateSamplingTest, TheDecisionRecordAndHeaderSayWhatWasSampled) {
  build(64, 8);
  const Decision d = decide("least-request");
  std::vector<uint32_t> slots(64);
  for (uint32_t i = 0; i < 64; ++i) slots[i] = 100 + i;
  observe::DecisionRecord record;
  observe::fillDecisionRecord(record, d, slots, 0, "id", 0, 0, 0);
  EXPECT_EQ(record.sampled, 8u);
  EXPECT_EQ(record.ready, 64u);
  EXPECT_EQ(record.row_count, 8u);
  EXPECT_EQ(record.rows[0].replica_slot, 100u + d.chosen) << "the chosen row comes first";
  std::string header;
  observe::appendDecisionHeader(header, d, model());
  EXPECT_NE(header.find("; ready=64; sampled=8; candidates="), std::string::npos) << header;
}

}  // namespace
}  // namespace switchyard::routing
