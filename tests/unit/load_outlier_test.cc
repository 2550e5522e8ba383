// The health manager's load-outlier gate judges load in the units load-balance balances, so a
// replica carrying its fair share is never excluded as a hotspot.
#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>

#include "fleet/fleet_registry.h"
#include "health/health_manager.h"
#include "profile/slo_profiles.h"

namespace switchyard::health {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

class LoadOutlierTest : public ::testing::Test {
 protected:
  // One slow replica (capacity 1000 tokens/s) and three fast ones (2500), all with the same
  // batching curve.
  void build(fleet::LoadBalanceScore score, std::string strategy = "",
             std::shared_ptr<const profile::SloProfiles> slo = nullptr) {
    fleet::ModelSpec model;
    model.name = "m";
    model.load_balance.score = score;
    model.routing_strategy = std::move(strategy);
    model.slo = std::move(slo);
    for (int i = 0; i < 4; ++i) {
      model.replicas.push_back({"10.0.0.1:" + std::to_string(9000 + i), {}});
    }
    registry_.apply({model}, kNsPerSec, "load-balance");
    snapshot_ = registry_.latest();
    manager_.sync(snapshot_);
    for (int i = 0; i < 4; ++i) replica(i).storeCapacity({i == 0 ? 1000.0 : 2500.0, kNaN, false,
                                                          1.0 / 40});
    fleet::refreshLearnedMeans(snapshot_->models[0]);  // as after a capacity refresh
  }
  fleet::ReplicaState& replica(int i) { return *snapshot_->models[0].replicas[i].state; }
  void load(int64_t slow, int64_t fast) {
    replica(0).counters().running.store(slow);
    for (int i = 1; i < 4; ++i) replica(i).counters().running.store(fast);
    clock_.advance(100 * kNsPerMs);
    manager_.tick();
  }
  bool slowExcluded() { return replica(0).health() == fleet::HealthState::kExcluded; }

  boost::asio::io_context io_;  // never run: no probes go out
  ManualClock clock_{kNsPerSec};
  HealthManager manager_{io_, clock_, HealthSettings{}};
  fleet::FleetRegistry registry_;
  std::shared_ptr<const fleet::FleetSnapshot> snapshot_;
};

TEST_F(LoadOutlierTest, UtilizationScoreComparesInFlightCountsOnEqualCurves) {
  // Under the utilization score equal curves mean equal in-flight counts are equal utilisation:
  // the slow replica at 36 against 28 is not a hotspot (per unit of capacity it is 3.2x).
  build(fleet::LoadBalanceScore::kUtilization);
  load(36, 28);
  EXPECT_FALSE(slowExcluded());
  load(100, 28);  // a real pile-up still is
  EXPECT_TRUE(slowExcluded());
}

TEST_F(LoadOutlierTest, RequestsPerCapacityScoreComparesLoadPerUnitOfCapacity) {
  build(fleet::LoadBalanceScore::kRequestsPerCapacity);
  load(36, 28);
  EXPECT_TRUE(slowExcluded());
}

TEST_F(LoadOutlierTest, TheGateOpensJustAboveTheFactorTimesTheMedianAndNotBelow) {
  // Requests per unit of capacity: 25 on a fast replica is 0.01, the median; the slow replica
  // (capacity 1000) is an outlier above 3 x 0.01, i.e. above 30 in flight.
  build(fleet::LoadBalanceScore::kRequestsPerCapacity);
  load(29, 25);
  EXPECT_FALSE(slowExcluded());
  load(25, 25);  // 0.025 per unit of capacity: 2.5 x the median
  EXPECT_FALSE(slowExcluded());
  load(31, 25);
  EXPECT_TRUE(slowExcluded());
}

TEST_F(LoadOutlierTest, AModelRoutedBySloPredictionIsLeftToItsPredictions) {
  // SLO routing loads a replica as far as its profile says the SLO holds (pack-load on purpose):
  // a replica far above the others is the plan there, not a hotspot.
  auto slo = std::make_shared<profile::SloProfiles>();
  for (std::string strategy : {"slo-pack-load", "slo", "slo-least-load:2,slo-pack-load:1"}) {
    build(fleet::LoadBalanceScore::kUtilization, strategy, slo);
    load(100, 28);
    EXPECT_FALSE(slowExcluded()) << strategy;
  }
  // Blended with a strategy that balances, or without profiles (load-balance decides), the
  // gate holds.
  build(fleet::LoadBalanceScore::kUtilization, "slo-pack-load:1,least-request:1", slo);
  load(100, 28);
  EXPECT_TRUE(slowExcluded());
  build(fleet::LoadBalanceScore::kUtilization, "slo-pack-load");
  load(100, 28);
  EXPECT_TRUE(slowExcluded());
}

}  // namespace
}  // namespace switchyard::health
