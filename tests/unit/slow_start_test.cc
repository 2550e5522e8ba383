// Slow start: a replica that became ready recently carries synthetic load that decays over the
// ramp, so its share of traffic grows instead of starting with a stampede.
#include "routing/slow_start.h"

#include <gtest/gtest.h>

#include <cmath>
#include <deque>
#include <vector>

#include "fleet/fleet_registry.h"
#include "routing/router.h"

namespace switchyard::routing {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr TimeNs kRamp = 30 * kNsPerSec;
constexpr TimeNs kAdded = 100 * kNsPerSec;

fleet::ModelSpec modelSpec(int replicas, TimeNs ramp = kRamp) {
  fleet::ModelSpec model;
  model.name = "m";
  model.slow_start.ramp = ramp;
  model.top_k = {.k = 2, .tolerance_requests = 1, .tolerance_fraction = 0};
  for (int i = 0; i < replicas; ++i) {
    model.replicas.push_back({"10.0.0.1:" + std::to_string(9000 + i), {}});
  }
  return model;
}

// Four replicas serving since the gateway started; a reload at kAdded brings a fifth.
class SlowStartTest : public ::testing::Test {
 public:  // the simulation below drives the fixture
  void start(TimeNs ramp = kRamp) {
    registry_.apply({modelSpec(4, ramp)}, kNsPerSec, "least-request-top-k", 1.0, 0);
    registry_.apply({modelSpec(5, ramp)}, kNsPerSec, "least-request-top-k", 1.0, kAdded);
    snapshot_ = registry_.latest();
  }
  fleet::ReplicaState& replica(int i) { return *snapshot_->models[0].replicas[i].state; }
  Decision decide(std::string_view strategy, TimeNs now) {
    EXPECT_EQ(parseStrategySpec(strategy, spec_), SpecError::kNone);
    RouteRequest request{&spec_, now, {}, {}};
    fleet::refreshLearnedMeans(snapshot_->models[0]);  // as after a capacity refresh
    return route(*snapshot_, snapshot_->models[0], request, rng_, scratch_);
  }

  fleet::FleetRegistry registry_;
  std::shared_ptr<const fleet::FleetSnapshot> snapshot_;
  Rng rng_{5};
  RoutingScratch scratch_;
  StrategySpec spec_;
};

TEST_F(SlowStartTest, OnlyReplicasJoiningARunningFleetRamp) {
  start();
  for (int i = 0; i < 4; ++i) EXPECT_EQ(replica(i).readySince(), fleet::ReplicaState::kEstablished);
  EXPECT_EQ(replica(4).readySince(), kAdded);
}

TEST_F(SlowStartTest, SyntheticLoadDecaysLinearlyOverTheRamp) {
  start();
  for (int i = 0; i < 4; ++i) replica(i).counters().running.store(8 + 2 * (i % 2));  // mean 9
  const std::pair<TimeNs, double> expected[] = {
      {0, 9.0}, {kRamp / 4, 6.75}, {kRamp / 2, 4.5}, {kRamp - 1, 0.0}, {kRamp, 0.0}};
  for (const auto& [elapsed, synthetic] : expected) {
    const Decision d = decide("least-request-top-k", kAdded + elapsed);
    EXPECT_NEAR(d.rows[4].synthetic_load, synthetic, 1e-6) << elapsed;
    EXPECT_NEAR(d.rows[4].score, synthetic, 1e-6) << elapsed;
    for (int i = 0; i < 4; ++i) {  // established replicas are scored on their own load only
      EXPECT_EQ(d.rows[i].synthetic_load, 0.0);
      EXPECT_EQ(d.rows[i].score, static_cast<double>(8 + 2 * (i % 2)));
    }
  }
}

TEST_F(SlowStartTest, AggressionShapesTheRamp) {
  fleet::SlowStartParams p{.ramp = 100, .aggression = 2.0};
  EXPECT_DOUBLE_EQ(slowStartProgress(1000, 1025, p), 0.25);
  EXPECT_DOUBLE_EQ(slowStartTrust(0.25, 2.0), 0.5);  // sqrt: a faster start
  EXPECT_DOUBLE_EQ(slowStartProgress(fleet::ReplicaState::kEstablished, 0, p), 1.0);
  p.ramp = 0;  // disabled
  EXPECT_DOUBLE_EQ(slowStartProgress(1000, 1000, p), 1.0);
}

TEST_F(SlowStartTest, WithNoEstablishedBaselineNobodyIsPenalised) {
  start();
  for (int i = 0; i < 4; ++i) replica(i).markReady(kAdded);
  replica(0).counters().running.store(6);
  const Decision d = decide("least-request-top-k", kAdded + kRamp / 2);
  for (int i = 0; i < 5; ++i) EXPECT_EQ(d.rows[i].synthetic_load, 0.0) << i;
}

// Closed loop: arrivals every 10 ms, each request holds its replica for 100 arrivals (about 100
// in flight, 20 per replica when balanced). Returns the new replica's share of the arrivals in
// each tenth of the ramp, then in the tenth after it.
std::vector<double> simulateShares(SlowStartTest& t, std::string_view strategy, int first_n,
                                   double* first_share) {
  std::deque<int> in_flight;
  std::vector<double> shares;
  int window_hits = 0, window_n = 0, first_hits = 0;
  const TimeNs step = 10 * kNsPerMs;
  const int per_window = static_cast<int>(kRamp / step / 10);
  // Warm the established replicas up to their steady state before the new one counts.
  for (int i = 0; i < 4; ++i) t.replica(i).counters().running.store(25);
  for (int n = 0; n < 11 * per_window; ++n) {
    const Decision d = t.decide(strategy, kAdded + n * step);
    t.replica(d.chosen).counters().running.fetch_add(1);
    in_flight.push_back(d.chosen);
    if (in_flight.size() > 100) {
      t.replica(in_flight.front()).counters().running.fetch_sub(1);
      in_flight.pop_front();
    } else {
      // Drain the warm-up load at the same rate the new requests arrive.
      t.replica(n % 4).counters().running.fetch_sub(1);
    }
    const bool hit = d.chosen == 4;
    if (n < first_n) first_hits += hit;
    window_hits += hit;
    if (++window_n == per_window) {
      shares.push_back(static_cast<double>(window_hits) / per_window);
      window_hits = window_n = 0;
    }
  }
  *first_share = static_cast<double>(first_hits) / first_n;
  return shares;
}

TEST_F(SlowStartTest, NewReplicaShareGrowsOverTheRampInsteadOfAStampede) {
  start();
  double first = 0;
  const std::vector<double> shares = simulateShares(*this, "least-request-top-k", 50, &first);
  ASSERT_EQ(shares.size(), 11u);
  EXPECT_LT(first, 0.1) << "the first 50 decisions";
  EXPECT_LT(shares[0], 0.06);
  EXPECT_GT(shares[4], 0.05);
  EXPECT_LT(shares[4], 0.17);
  EXPECT_GT(shares[10], 0.15);  // after the ramp: a full fifth
  EXPECT_LT(shares[10], 0.25);
  // Grows across the ramp (compare thirds to smooth out the discreteness of the counts).
  EXPECT_LT(shares[0] + shares[1] + shares[2], shares[3] + shares[4] + shares[5]);
  EXPECT_LT(shares[3] + shares[4] + shares[5], shares[7] + shares[8] + shares[9]);
}

TEST_F(SlowStartTest, WithoutSlowStartTheNewReplicaIsStampeded) {
  start(0);
  double first = 0;
  simulateShares(*this, "least-request-top-k", 50, &first);
  EXPECT_GT(first, 0.3);  // the contrast that the previous test guards against
}

TEST_F(SlowStartTest, LoadBalanceDoesNotTrustAWarmingReplicasCapacityYet) {
  start();
  for (int i = 0; i < 4; ++i) {
    replica(i).counters().running.store(10);
    replica(i).storeCapacity({100, kNaN, false});
  }
  replica(4).storeCapacity({400, kNaN, false});  // measured on a trickle of traffic
  // Just ready: the established mean load (10) and capacity (100): scored like its peers.
  Decision d = decide("load-balance", kAdded);
  EXPECT_NEAR(d.rows[4].score, d.rows[0].score, 1e-9);
  EXPECT_NEAR(d.rows[4].synthetic_load, 10, 1e-9);
  // Half-way: load 5 synthetic, capacity 0.5 x 400 + 0.5 x 100.
  d = decide("load-balance", kAdded + kRamp / 2);
  EXPECT_NEAR(d.rows[4].score, (5.0 + 1.0) / 250.0, 1e-9);
  // Established: its own learned capacity.
  d = decide("load-balance", kAdded + kRamp);
  EXPECT_NEAR(d.rows[4].score, 1.0 / 400.0, 1e-9);
  EXPECT_NEAR(d.rows[0].score, 11.0 / 100.0, 1e-9);
}

}  // namespace
}  // namespace switchyard::routing
