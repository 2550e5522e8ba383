// The load-balance score and every row of the edge-case table of docs/routing.md.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <utility>
#include <vector>

#include "fleet/fleet_registry.h"
#include "routing/router.h"

namespace switchyard::routing {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

class LoadBalanceTest : public ::testing::Test {
 protected:
  void build(int replicas, fleet::LoadBalanceParams params = {}, double auto_blend = 1.0) {
    fleet::ModelSpec model;
    model.name = "m";
    model.load_balance = params;
    for (int i = 0; i < replicas; ++i) {
      model.replicas.push_back({"10.0.0.1:" + std::to_string(9000 + i), {}});
    }
    registry_.apply({model}, kNsPerSec, "load-balance", auto_blend);
    snapshot_ = registry_.latest();
  }
  fleet::ReplicaState& replica(int i) { return *snapshot_->models[0].replicas[i].state; }
  void set(int i, int64_t running, double capacity, double kv_usage, double waiting = 0,
           double cpu_kv = kNaN) {
    replica(i).counters().running.store(running);
    replica(i).storeCapacity({capacity, kNaN, false});
    fleet::EngineSignals s;
    s.running = static_cast<double>(running);
    s.waiting = waiting;
    s.kv_usage = kv_usage;
    s.cpu_kv_usage = cpu_kv;
    replica(i).storeSignals(s, now_);
  }
  Decision decide(std::string_view strategy, RequestShape shape = {}) {
    EXPECT_EQ(parseStrategySpec(strategy, spec_), SpecError::kNone);
    RouteRequest request{&spec_, now_, {}, shape};
    // The control plane refreshes the model's means after every capacity refresh.
    fleet::refreshLearnedMeans(snapshot_->models[0]);
    return route(*snapshot_, snapshot_->models[0], request, rng_, scratch_);
  }
  double score(const Decision& d, int i) { return d.rows[i].score; }
  // The learned batching curve: time per token t(n) = t(0)·(1 + slowdown·n).
  void curve(int i, double slowdown) {
    fleet::LearnedCapacity c = replica(i).capacity();
    c.slowdown = slowdown;
    replica(i).storeCapacity(c);
  }
  // Predicted utilisation with one more request, for equal slowdowns s and no KV penalty.
  static double utilization(double running, double s) {
    return (running + 1) * (1 + s * 64) / (64 * (1 + s * (running + 1)));
  }
  // Two replicas with no KV pressure: {running, capacity, slowdown} each.
  struct Learned {
    int64_t running;
    double capacity;
    double slowdown;
  };
  void two(const fleet::LoadBalanceParams& params, Learned a, Learned b) {
    build(2, params);
    int i = 0;
    for (const Learned& r : {a, b}) {
      set(i, r.running, r.capacity, 0);
      curve(i++, r.slowdown);
    }
  }
  static fleet::LoadBalanceParams band(double fastest_within) {
    fleet::LoadBalanceParams p;
    p.fastest_within = fastest_within;
    return p;
  }

  fleet::FleetRegistry registry_;
  std::shared_ptr<const fleet::FleetSnapshot> snapshot_;
  TimeNs now_ = 5 * kNsPerSec;
  Rng rng_{11};
  RoutingScratch scratch_;
  StrategySpec spec_;
};

TEST_F(LoadBalanceTest, WorkedExampleTheFastestReplicaWinsDespiteMostRequests) {
  build(3);
  set(0, 20, 4000, 0.70);  // A100: 30 % KV free
  set(1, 25, 3000, 0.40);  // L20:  60 % free
  set(2, 30, 6000, 0.50);  // B100: 50 % free
  const Decision d = decide("load-balance");
  EXPECT_NEAR(score(d, 0), 21.0 / 4000 * (1 + 2 * 0.49), 1e-12);
  EXPECT_NEAR(score(d, 1), 26.0 / 3000 * (1 + 2 * 0.16), 1e-12);
  EXPECT_NEAR(score(d, 2), 31.0 / 6000 * (1 + 2 * 0.25), 1e-12);
  EXPECT_EQ(d.chosen, 2);
}

TEST_F(LoadBalanceTest, IdleReplicasAreRankedBySpeed) {
  build(2);
  set(0, 0, 1000, 0);
  set(1, 0, 3000, 0);
  EXPECT_EQ(decide("load-balance").chosen, 1);  // the +1: the cost of adding this request
}

TEST_F(LoadBalanceTest, ReplicaWithoutEstimateIsScoredAtTheMeanOfKnownOnes) {
  build(3);
  set(0, 4, 1000, 0);
  set(1, 4, 3000, 0);
  set(2, 4, kNaN, 0);
  const Decision d = decide("load-balance");
  EXPECT_NEAR(score(d, 2), 5.0 / 2000, 1e-12);
}

TEST_F(LoadBalanceTest, NoEstimateAnywhereMeansEqualCapacities) {
  build(2);
  set(0, 3, kNaN, 0.5);
  set(1, 1, kNaN, 0.0);
  const Decision d = decide("load-balance");
  EXPECT_NEAR(score(d, 0), 4.0 * (1 + 2 * 0.25), 1e-12);
  EXPECT_NEAR(score(d, 1), 2.0, 1e-12);
  EXPECT_EQ(d.chosen, 1);
}

TEST_F(LoadBalanceTest, MissingOrNanKvUsageIsFullyFree) {
  build(2);
  set(0, 1, 1000, kNaN);  // fresh telemetry, the engine does not export KV usage
  set(1, 1, 1000, 0.0);
  const Decision d = decide("load-balance");
  EXPECT_EQ(score(d, 0), score(d, 1));
}

TEST_F(LoadBalanceTest, StaleTelemetryIsNotMadeAttractive) {
  build(3);
  set(0, 2, 1000, 0.6);
  set(1, 2, 1000, 0.2);
  set(2, 2, 1000, 0.0);
  // Replica 2's last read is older than the snapshot's maximum signal age: unknown, not idle.
  fleet::EngineSignals old;
  old.kv_usage = 0.0;
  replica(2).storeSignals(old, now_ - 10 * kNsPerSec);
  const Decision d = decide("load-balance");
  EXPECT_EQ(score(d, 2), score(d, 0));  // scored as the worst fresh replica
  EXPECT_EQ(d.chosen, 1);
}

TEST_F(LoadBalanceTest, KvCriticalReplicaIsSkippedButNeverFailsTheRequest) {
  build(2);
  set(0, 0, 9000, 0.95);  // 5 % free < 10 % critical
  set(1, 30, 1000, 0.5);
  Decision d = decide("load-balance");
  EXPECT_TRUE(std::isinf(score(d, 0)));
  EXPECT_EQ(d.chosen, 1);
  EXPECT_FALSE(d.relaxed);
  EXPECT_EQ(d.rows[0].passed_over, PassOver::kNone);  // alone, the +Inf score says it

  set(1, 30, 1000, 0.97);  // now every replica is critical: the most headroom wins
  d = decide("load-balance");
  EXPECT_EQ(d.chosen, 0);
  EXPECT_TRUE(d.relaxed);
}

// In a blend the critical replica keeps a finite score (the penalty times load-balance's weight),
// so only its row's mark says that load-balance passed it over.
TEST_F(LoadBalanceTest, ABlendMarksTheReplicaLoadBalancePassedOver) {
  build(3);
  set(0, 0, 1000, 0.95);
  set(1, 1, 1000, 0.2);
  set(2, 2, 1000, 0.2);
  const Decision d = decide("least-request:1,load-balance:1");
  EXPECT_TRUE(std::isfinite(score(d, 0)));
  EXPECT_DOUBLE_EQ(score(d, 0), kInfPenalty);  // least-request 0 + load-balance's penalty
  EXPECT_EQ(d.rows[0].passed_over, PassOver::kKvCritical);
  EXPECT_EQ(d.rows[1].passed_over, PassOver::kNone);
  EXPECT_EQ(d.rows[2].passed_over, PassOver::kNone);
  EXPECT_EQ(d.chosen, 1);
}

TEST_F(LoadBalanceTest, TiesGoToLeastCombinedKvUsageThenRandom) {
  build(3);
  // Equal scores: same load, capacity and GPU KV; CPU KV usage differs.
  set(0, 2, 1000, 0.3, 0, 0.4);
  set(1, 2, 1000, 0.3, 0, 0.1);
  set(2, 2, 1000, 0.3, 0, 0.4);
  for (int i = 0; i < 10; ++i) EXPECT_EQ(decide("load-balance").chosen, 1);
  set(1, 2, 1000, 0.3, 0, 0.4);
  std::map<int, int> picks;
  for (int i = 0; i < 300; ++i) ++picks[decide("load-balance").chosen];
  EXPECT_EQ(picks.size(), 3u);
}

TEST_F(LoadBalanceTest, QueuedRequestsCountOnlyWithPositiveLambda) {
  build(2);
  set(0, 2, 1000, 0, /*waiting=*/10);
  set(1, 3, 1000, 0, /*waiting=*/0);
  EXPECT_EQ(decide("load-balance").chosen, 0);
  build(2, fleet::LoadBalanceParams{1.0, 2.0, 0.1});
  set(0, 2, 1000, 0, 10);
  set(1, 3, 1000, 0, 0);
  const Decision d = decide("load-balance");
  EXPECT_NEAR(score(d, 0), 13.0 / 1000, 1e-12);
  EXPECT_EQ(d.chosen, 1);
}

TEST_F(LoadBalanceTest, InABlendInfinityIsAPenaltyNotAnExclusion) {
  build(3);
  set(0, 0, 1000, 0.95);  // KV-critical but idle
  set(1, 9, 1000, 0.1);
  set(2, 9, 1000, 0.1);
  EXPECT_NE(decide("load-balance").chosen, 0);
  // least-request likes replica 0 enough to outweigh load-balance's +Inf.
  EXPECT_EQ(decide("least-request:10,load-balance:1").chosen, 0);
  EXPECT_NE(decide("least-request:1,load-balance:1").chosen, 0);
}

TEST_F(LoadBalanceTest, LoadBalanceIsAutoBlendedBehindOtherStrategies) {
  build(2, {}, /*auto_blend=*/0.0);
  set(0, 40, 1000, 0.20);  // less KV used, but far busier for its capacity
  set(1, 1, 1000, 0.30);
  EXPECT_EQ(decide("least-kv-cache").chosen, 0);
  build(2, {}, /*auto_blend=*/5.0);
  set(0, 40, 1000, 0.20);
  set(1, 1, 1000, 0.30);
  EXPECT_EQ(decide("least-kv-cache").chosen, 1);
  // The baselines stay pure.
  EXPECT_EQ(decide("least-request").chosen, 1);
  set(0, 0, 1000, 0.9);
  EXPECT_EQ(decide("least-request").chosen, 0);
}

// The utilisation score (the default once a batching curve is learned).

TEST_F(LoadBalanceTest, UtilizationCountsLoadInTheReplicasOwnUnits) {
  // Same curve, three times the speed: the fast replica already delivers three times the tokens
  // at the same in-flight count, so equal in-flight counts are equal utilisation. Requests per
  // token/s would pile in-flight requests onto the fast replica as well.
  two(band(0), {10, 3000, 1.0 / 40}, {8, 1000, 1.0 / 40});
  const Decision d = decide("load-balance");
  EXPECT_NEAR(score(d, 0), utilization(10, 1.0 / 40), 1e-12);
  EXPECT_NEAR(score(d, 1), utilization(8, 1.0 / 40), 1e-12);
  EXPECT_EQ(d.chosen, 1);
  fleet::LoadBalanceParams seed = band(0);
  seed.score = fleet::LoadBalanceScore::kRequestsPerCapacity;
  two(seed, {10, 3000, 1.0 / 40}, {8, 1000, 1.0 / 40});
  EXPECT_EQ(decide("load-balance").chosen, 0);  // 11/3000 < 9/1000
}

TEST_F(LoadBalanceTest, AFlatterCurveTakesMoreLoad) {
  // A replica whose time per token grows more slowly with load is further from saturation at
  // the same in-flight count.
  two(band(0), {12, 1000, 1.0 / 80}, {12, 1000, 1.0 / 20});
  const Decision d = decide("load-balance");
  EXPECT_LT(score(d, 0), score(d, 1));
  EXPECT_EQ(d.chosen, 0);
}

TEST_F(LoadBalanceTest, ReplicaWithoutACurveIsScoredAtTheMeanCurve) {
  build(3, band(0));
  set(0, 4, 1000, 0);
  set(1, 4, 1000, 0);
  set(2, 4, 1000, 0);
  curve(0, 1.0 / 40);
  curve(1, 3.0 / 40);
  const Decision d = decide("load-balance");
  EXPECT_NEAR(score(d, 2), utilization(4, 2.0 / 40), 1e-12);
  // No curve anywhere: requests per unit of capacity, as before anything was fitted.
  for (int i = 0; i < 3; ++i) curve(i, kNaN);
  EXPECT_NEAR(score(decide("load-balance"), 0), 5.0 / 1000, 1e-12);
}

TEST_F(LoadBalanceTest, UtilizationKeepsTheKvGuardrail) {
  build(2, band(0));
  set(0, 0, 9000, 0.95);  // critical
  set(1, 5, 1000, 0.5);
  curve(0, 1.0 / 40);
  curve(1, 1.0 / 40);
  const Decision d = decide("load-balance");
  EXPECT_TRUE(std::isinf(score(d, 0)));
  EXPECT_NEAR(score(d, 1), utilization(5, 1.0 / 40) * (1 + 2 * 0.25), 1e-12);
  EXPECT_EQ(d.chosen, 1);
}

TEST_F(LoadBalanceTest, WithinTheBandTheFastestReplicaWins) {
  build(3);  // default band: 0.03
  set(0, 10, 1000, 0);
  set(1, 10, 3000, 0);  // as utilised, three times the speed per stream
  set(2, 10, 2000, 0.3);
  for (int i = 0; i < 3; ++i) curve(i, 1.0 / 40);
  Decision d = decide("load-balance");
  EXPECT_EQ(d.chosen, 1);
  EXPECT_EQ(d.pick_set, 2u);  // replica 2 is outside the band: its KV penalty
  EXPECT_TRUE(d.rows[0].in_pick_set);
  EXPECT_TRUE(d.rows[1].in_pick_set);
  EXPECT_FALSE(d.rows[2].in_pick_set);
  // Outside the band utilisation decides: the fast replica is four requests busier.
  set(1, 14, 3000, 0);
  d = decide("load-balance");
  EXPECT_GT(score(d, 1) - score(d, 0), 0.03);
  EXPECT_EQ(d.chosen, 0);
  EXPECT_EQ(d.pick_set, 1u);
}

TEST_F(LoadBalanceTest, ShapeAwareSendsPromptHeavyRequestsToFastPrefill) {
  build(2);
  for (int i = 0; i < 2; ++i) {
    replica(i).counters().requests_total.store(100);
    replica(i).counters().input_tokens_total.store(100 * 500);
    replica(i).counters().output_tokens_total.store(100 * 100);
    set(i, 2, 1000, 0);
  }
  // Same decode speed; replica 1 prefills four times faster, replica 0 decodes a bit faster.
  replica(0).storeCapacity({1100, 5000, false});
  replica(1).storeCapacity({1000, 20000, false});
  EXPECT_EQ(decide("load-balance-shape-aware", {8000, 16}).chosen, 1);  // long prompt
  EXPECT_EQ(decide("load-balance-shape-aware", {10, 2000}).chosen, 0);  // long output
  // Plain load-balance only sees decode capacity.
  EXPECT_EQ(decide("load-balance", {8000, 16}).chosen, 0);
}

TEST_F(LoadBalanceTest, ShapeAwareWeighsTheRequestByWhatEachReplicaIsGoodAt) {
  // Utilisation score: the request counts as its cost relative to the replica's typical one, at
  // that replica's own prefill and decode rates.
  build(2, band(0));
  for (int i = 0; i < 2; ++i) {
    replica(i).counters().requests_total.store(100);
    replica(i).counters().input_tokens_total.store(100 * 500);
    replica(i).counters().output_tokens_total.store(100 * 100);
    set(i, 2, 1000, 0);
  }
  replica(0).storeCapacity({1100, 5000, false, 1.0 / 40});
  replica(1).storeCapacity({1000, 20000, false, 1.0 / 40});
  Decision d = decide("load-balance-shape-aware", {8000, 16});
  const double typical1 = 500.0 / 20000 + 100.0 / 1000;
  const double cost1 = 8000.0 / 20000 + 16.0 / 1000;
  EXPECT_NEAR(score(d, 1), (2 + cost1 / typical1) / 3 * utilization(2, 1.0 / 40), 1e-12);
  EXPECT_EQ(d.chosen, 1);  // prompt-heavy: the fast prefill
  EXPECT_EQ(decide("load-balance-shape-aware", {10, 2000}).chosen, 0);  // output-heavy
  // A typical request weighs 1 everywhere: the plain utilisation score.
  d = decide("load-balance-shape-aware", {500, 100});
  EXPECT_NEAR(score(d, 0), utilization(2, 1.0 / 40), 1e-12);
}

TEST_F(LoadBalanceTest, ShapeAwareFallsBackWhileNothingIsLearned) {
  build(2);
  set(0, 3, kNaN, 0);
  set(1, 1, kNaN, 0);
  const Decision d = decide("load-balance-shape-aware", {100, 100});
  EXPECT_NEAR(score(d, 0), 4.0, 1e-12);
  EXPECT_EQ(d.chosen, 1);
}

// A decision whose candidates are all plain (fresh telemetry, not warming) is scored in one pass
// from the replicas; one stale replica sends every candidate through the gathered table instead.
// Both must give the other candidates the very same scores, KV-critical ones included, with
// every form of the score.
TEST_F(LoadBalanceTest, OnePassAndGatheredScoresAgree) {
  Rng draw(3);
  constexpr int kReplicas = 19;
  for (const char* strategy : {"load-balance", "load-balance-shape-aware"}) {
    // Each form of the score: utilisation with and without its band, requests per capacity.
    for (const auto& [form, band] :
         {std::pair{fleet::LoadBalanceScore::kUtilization, 0.03},
          std::pair{fleet::LoadBalanceScore::kUtilization, 0.0},
          std::pair{fleet::LoadBalanceScore::kRequestsPerCapacity, 0.03}}) {
      fleet::LoadBalanceParams params;
      params.score = form;
      params.fastest_within = band;
      params.queued_weight = 0.5;
      build(kReplicas, params);
      for (int i = 0; i < kReplicas; ++i) {
        replica(i).counters().requests_total.store(50 + draw.below(50));
        replica(i).counters().input_tokens_total.store(20000 + draw.below(20000));
        replica(i).counters().output_tokens_total.store(5000 + draw.below(5000));
        set(i, draw.below(20), i % 4 ? 500.0 + draw.below(2000) : kNaN,
            0.01 * draw.below(95), draw.below(5), 0.01 * draw.below(50));
        replica(i).storeCapacity({replica(i).capacity().decode, 4000.0 + draw.below(8000),
                                  false, i % 3 ? 0.002 * draw.below(20) : kNaN});
      }
      set(0, 3, 1000, 0.0);  // the least KV pressure: staleness can only make it worse
      const Decision one_pass = decide(strategy, {1200, 300});
      std::vector<double> expected(kReplicas);
      for (int i = 0; i < kReplicas; ++i) expected[i] = score(one_pass, i);
      // The draw makes some replicas KV-critical (+Inf), so that case is compared too.
      EXPECT_TRUE(std::any_of(expected.begin(), expected.end(),
                              [](double s) { return std::isinf(s); }))
          << strategy;
      fleet::EngineSignals old;
      old.kv_usage = 0.0;
      replica(0).storeSignals(old, now_ - 10 * kNsPerSec);
      const Decision gathered = decide(strategy, {1200, 300});
      for (int i = 1; i < kReplicas; ++i) {
        EXPECT_EQ(score(gathered, i), expected[i]) << strategy << " replica " << i;
      }
      EXPECT_GT(score(gathered, 0), expected[0]) << strategy << ": stale, scored at the worst";
    }
  }
}

}  // namespace
}  // namespace switchyard::routing
