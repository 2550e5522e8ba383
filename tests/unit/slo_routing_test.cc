// SLO routing: the slo strategies against hand-made profiles of two GPU types — one fast at
// short prompts and hopeless at long ones, the other slower but steady — through the real router.
#include <gtest/gtest.h>

#include <map>

#include "allocation_count.h"
#include "fleet/fleet_registry.h"
#include "profile/slo_profiles.h"
#include "routing/router.h"
#include "routing/strategy_spec.h"

namespace switchyard::routing {
namespace {

// A 2×2 profile (prompts 64 and 4096, output 64) whose TPOT grows with concurrency:
// tpot(n) = base × (1 + n / 8) at prompt 64 and `long_factor` × that at prompt 4096; TTFT is
// short for short prompts and `long_ttft` for long ones. Rates within the SLO: 10 requests/s at
// prompt 64 and 1 at 4096, 0 (not promised) where even one request in flight misses 50 ms.
profile::GpuProfile makeProfile(const std::string& gpu, double base_tpot, double long_factor,
                                double long_ttft) {
  profile::GpuProfile p;
  p.gpu = gpu;
  p.deployment = gpu;
  p.model = "m";
  p.slo.tpot = 0.05;
  p.outputs = {64, 128};
  p.prompts = {64, 4096};
  const double alone = base_tpot * (1 + 1.0 / 8);
  const double short_rate = alone <= 0.05 ? 10.0 : 0.0;
  const double long_rate = alone * long_factor <= 0.05 ? 1.0 : 0.0;
  p.tputs = {{short_rate, long_rate}, {short_rate, long_rate}};
  p.steps.assign(2, std::vector<std::vector<profile::Step>>(2));
  for (int o = 0; o < 2; ++o) {
    for (int in = 0; in < 2; ++in) {
      for (double n : {1.0, 4.0, 8.0, 16.0}) {
        profile::Step s;
        s.offered_rps = n;
        s.arrival_rps = n;
        s.achieved_rps = n;
        s.mean_concurrency = n;
        s.requests = 100;
        const double tpot = base_tpot * (1 + n / 8) * (in == 1 ? long_factor : 1.0);
        const double ttft = in == 1 ? long_ttft : 0.05;
        s.tpot = {tpot, tpot, tpot, tpot};
        s.ttft = {ttft, ttft, ttft, ttft};
        const double e2e = ttft + 63 * tpot;
        s.e2e = {e2e, e2e, e2e, e2e};
        p.steps[o][in].push_back(s);
      }
    }
  }
  EXPECT_EQ(p.validate(), "");
  p.index();
  return p;
}

class SloRoutingTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto slo = std::make_shared<profile::SloProfiles>();
    slo->objective.tpot = 0.05;
    slo->objective.percentile = 99;
    // A10: 20 ms/token alone at short prompts, but 4× slower with long prompts in the batch.
    slo->gpus = {"A10", "L20"};
    slo->profiles.push_back(makeProfile("A10", 0.020, 4.0, 1.5));
    // L20: 30 ms/token, and long prompts cost it little.
    slo->profiles.push_back(makeProfile("L20", 0.030, 1.2, 0.6));
    slo->findReservedTypes();  // the L20: only it serves long prompts in time
    applyFleet(slo);
  }
  // Two A10 and two L20 replicas of model "m" with these profiles.
  void applyFleet(std::shared_ptr<const profile::SloProfiles> slo) {
    fleet::ModelSpec model;
    model.name = "m";
    model.slo = std::move(slo);
    model.replicas.push_back({"10.0.0.1:9000", {{"gpu", "A10"}}});
    model.replicas.push_back({"10.0.0.1:9001", {{"gpu", "A10"}}});
    model.replicas.push_back({"10.0.0.1:9002", {{"gpu", "L20"}}});
    model.replicas.push_back({"10.0.0.1:9003", {{"gpu", "L20"}}});
    registry_.apply({model}, kNsPerSec, "slo");
    snapshot_ = registry_.latest();
  }
  const fleet::ModelEntry& model() { return snapshot_->models[0]; }
  void setRunning(int replica, int64_t running) {
    model().replicas[replica].state->counters().running.store(running);
  }
  Decision decide(std::string_view strategy, double prompt, double output = 64) {
    EXPECT_EQ(parseStrategySpec(strategy, spec_), SpecError::kNone) << strategy;
    RouteRequest request{&spec_, 0, {}, {}};
    request.shape.prompt_tokens = prompt;
    request.shape.max_tokens = output;
    return route(*snapshot_, model(), request, rng_, scratch_);
  }
  std::string gpuOf(const Decision& d) {
    return d.chosen < 0 ? "none" : std::string(model().replicas[d.chosen].gpu);
  }

  fleet::FleetRegistry registry_;
  std::shared_ptr<const fleet::FleetSnapshot> snapshot_;
  Rng rng_{3};
  RoutingScratch scratch_;
  StrategySpec spec_;
};

TEST_F(SloRoutingTest, LongPromptsGoWhereTheyCanMeetTheSlo) {
  // A long prompt would decode at 4 × 22.5 ms on an A10: only the L20s meet 50 ms.
  for (int i = 0; i < 20; ++i) EXPECT_EQ(gpuOf(decide("slo", 4096)), "L20");
  const Decision d = decide("slo-least-load", 4096);
  for (const CandidateRow& row : d.rows) {
    EXPECT_GT(row.predicted_tpot, 0) << row.replica_index;  // every candidate's prediction kept
  }
}

TEST_F(SloRoutingTest, LeastLoadSpreadsAndPackLoadConsolidates) {
  setRunning(0, 2);  // A10 #0 busier than A10 #1, both within the SLO
  setRunning(2, 3);  // L20s: 45 ms per token at 4 in flight, just within 50 ms
  setRunning(3, 3);
  // Short prompts: every replica meets the SLO, the A10s first (the L20s are kept for the long
  // prompts only they serve in time); least-load takes the most headroom.
  EXPECT_EQ(decide("slo-least-load", 64).chosen, 1);
  // Pack-load takes the fullest replica still predicted to meet it.
  EXPECT_EQ(decide("slo-pack-load", 64).chosen, 0);
  // A10 #0 past the SLO (52.5 ms per token at 13): packing moves to the other A10...
  setRunning(0, 12);
  EXPECT_EQ(decide("slo-pack-load", 64).chosen, 1);
  // ...and with both A10s past it, to an L20 that still meets it.
  setRunning(1, 12);
  const Decision packed = decide("slo-pack-load", 64);
  EXPECT_TRUE(packed.chosen == 2 || packed.chosen == 3) << packed.chosen;
}

TEST_F(SloRoutingTest, ATypeOnlyItServesInTimeIsReservedForThoseShapes) {
  const profile::SloProfiles& slo = *model().slo;
  EXPECT_FALSE(slo.isReserved(slo.profiles[0]));  // A10: every shape it serves, so does the L20
  EXPECT_TRUE(slo.isReserved(slo.profiles[1]));   // L20: the only one for 4096-token prompts
  // Both serve every shape in time: nothing to keep free.
  profile::SloProfiles even = slo;
  even.profiles[0] = makeProfile("A10", 0.020, 1.2, 0.6);
  even.findReservedTypes();
  EXPECT_FALSE(even.isReserved(even.profiles[0]));
  EXPECT_FALSE(even.isReserved(even.profiles[1]));
  // A shape neither serves in time reserves neither.
  profile::SloProfiles neither = slo;
  neither.profiles[1] = makeProfile("L20", 0.030, 2.0, 0.6);  // 67.5 ms vs the A10's 90 alone
  neither.findReservedTypes();
  EXPECT_FALSE(neither.isReserved(neither.profiles[0]));
  EXPECT_FALSE(neither.isReserved(neither.profiles[1]));
  // With the A10s as the spare type, a short prompt goes to an idle A10 rather than to an idle
  // L20 with more headroom; a long prompt still goes to an L20.
  EXPECT_EQ(gpuOf(decide("slo-least-load", 64)), "A10");
  EXPECT_EQ(gpuOf(decide("slo-least-load", 4096)), "L20");
  // One type alone keeps nothing free.
  profile::SloProfiles alone;
  alone.objective = slo.objective;
  alone.gpus = {"L20"};
  alone.profiles = {slo.profiles[1]};
  alone.findReservedTypes();
  EXPECT_FALSE(alone.isReserved(alone.profiles[0]));
}

TEST_F(SloRoutingTest, TheCheapestTypeThatMeetsTheSloComesFirst) {
  // Prices per replica-hour: A10 1, L20 `l20_cost`, at the same profiled rates.
  auto price = [&](double l20_cost) {
    auto priced = std::make_shared<profile::SloProfiles>(*model().slo);
    priced->profiles[0].cost = 1;
    priced->profiles[1].cost = l20_cost;
    applyFleet(priced);
    setRunning(0, 6);  // A10s: 37.5 ms per token at 7 in flight, within 50 ms but with less
    setRunning(1, 6);  // headroom than the idle L20s (34 ms)
  };
  // The L20 costs three times as much per short request: an A10 is the cheaper place for it,
  // although the L20s have more headroom.
  price(3);
  for (std::string_view strategy : {"slo", "slo-least-load", "slo-pack-load"}) {
    const Decision d = decide(strategy, 64);
    EXPECT_EQ(gpuOf(d), "A10") << strategy;
    for (const CandidateRow& row : d.rows) {
      const bool a10 = model().replicas[row.replica_index].gpu == "A10";
      EXPECT_NEAR(row.cost_per_request, (a10 ? 1.0 : 3.0) / (3600 * 10), 1e-9);
    }
  }
  // A long prompt meets the SLO only on an L20, whatever it costs.
  EXPECT_EQ(gpuOf(decide("slo-least-load", 4096)), "L20");
  // A10s loaded past the SLO (52.5 ms per token at 13): the dearer L20s take short prompts.
  setRunning(0, 12);
  setRunning(1, 12);
  EXPECT_EQ(gpuOf(decide("slo-least-load", 64)), "L20");
  // Within 10 % of each other the prices are one tier, but the L20s are reserved for the long
  // prompts only they serve: the A10s first, although the L20s have more headroom...
  price(1.05);
  EXPECT_EQ(gpuOf(decide("slo-least-load", 64)), "A10");
  // ...and where nothing is reserved, headroom alone decides within a tier.
  auto unreserved = std::make_shared<profile::SloProfiles>(*model().slo);
  unreserved->reserved.clear();
  applyFleet(unreserved);
  setRunning(0, 6);
  setRunning(1, 6);
  EXPECT_EQ(gpuOf(decide("slo-least-load", 64)), "L20");
}

TEST_F(SloRoutingTest, PromptsWaitingForTheirFirstTokenDelayTheTtftPredicted) {
  // A TTFT objective of 1 s: every replica meets it with a short prompt (50 ms alone).
  auto ttft = std::make_shared<profile::SloProfiles>(*model().slo);
  ttft->objective = {};
  ttft->objective.ttft = 1.0;
  ttft->objective.percentile = 99;
  applyFleet(ttft);
  // The idle A10 #1 has two 4k-token prompts sent and not yet answered: at the 5,000 prompt
  // tokens per second it learned, a new request's prefill waits 8000 / 5000 = 1.6 s there.
  fleet::ReplicaState& queued = *model().replicas[1].state;
  queued.storeCapacity({NAN, 5000, false, NAN});
  queued.counters().prefill_pending_tokens.store(8000);
  for (int r : {0, 2, 3}) setRunning(r, 6);  // the others busier but without a queued prefill
  for (std::string_view strategy : {"slo", "slo-least-load", "slo-pack-load"}) {
    const Decision d = decide(strategy, 64);
    EXPECT_NE(d.chosen, 1) << strategy;
    for (const CandidateRow& row : d.rows) {
      if (row.replica_index != 1) continue;
      EXPECT_NEAR(row.predicted_ttft, 0.05 + 1.6, 1e-4) << strategy;
    }
  }
  // Once their first tokens came, the idle replica is the least loaded again.
  queued.counters().prefill_pending_tokens.store(0);
  const Decision d = decide("slo-least-load", 64);
  EXPECT_EQ(d.chosen, 1);
}

TEST_F(SloRoutingTest, PullingHoldsWhenNoReplicaWouldMeetTheSlo) {
  for (int r = 0; r < 4; ++r) setRunning(r, 20);  // everyone far past 50 ms per token
  const Decision held = decide("slo", 64);
  EXPECT_TRUE(held.hold);
  EXPECT_EQ(held.chosen, -1);
  // A held decision still explains itself: each candidate's predicted time per token (all past
  // the objective) is in its row, and no pick set is marked.
  EXPECT_EQ(held.pick_set, 0u);
  for (const CandidateRow& row : held.rows) {
    EXPECT_GT(row.predicted_tpot, 0.05) << row.replica_index;
    EXPECT_FALSE(row.in_pick_set) << row.replica_index;
  }
  const Decision pulled = decide("slo-least-load-pulling", 64);
  EXPECT_TRUE(pulled.hold);
  // The non-pulling variants still route, to the least violation.
  const Decision least = decide("slo-least-load", 64);
  EXPECT_FALSE(least.hold);
  EXPECT_GE(least.chosen, 0);
}

TEST_F(SloRoutingTest, PullingDoesNotHoldWhatNoReplicaWouldMeetEvenAlone) {
  auto strict = std::make_shared<profile::SloProfiles>(*model().slo);
  strict->objective.tpot = 0.010;  // faster than either GPU type decodes alone
  fleet::ModelSpec spec;
  spec.name = "m";
  spec.slo = strict;
  spec.replicas.push_back({"10.0.0.1:9000", {{"gpu", "A10"}}});
  spec.replicas.push_back({"10.0.0.1:9002", {{"gpu", "L20"}}});
  registry_.apply({spec}, kNsPerSec, "slo");
  snapshot_ = registry_.latest();
  const Decision d = decide("slo", 64);
  EXPECT_FALSE(d.hold);
  EXPECT_EQ(d.chosen, 0);  // the least violation: the A10's 20 ms per token
}

TEST_F(SloRoutingTest, WithoutAProfileForEveryGpuTypeItFallsBackToLoadBalance) {
  fleet::ModelSpec spec;
  spec.name = "m";
  spec.slo = model().slo;
  spec.replicas.push_back({"10.0.0.1:9000", {{"gpu", "A10"}}});
  spec.replicas.push_back({"10.0.0.1:9005", {{"gpu", "H100"}}});  // no H100 profile
  registry_.apply({spec}, kNsPerSec, "slo");
  snapshot_ = registry_.latest();
  const Decision d = decide("slo", 64);
  EXPECT_TRUE(d.slo_fallback);
  EXPECT_FALSE(d.hold);
  EXPECT_GE(d.chosen, 0);
}

TEST_F(SloRoutingTest, ScoringDoesNotAllocate) {
  if (!switchyard::testing::allocationCounting()) GTEST_SKIP() << "sanitizer build";
  StrategySpec slo;
  ASSERT_EQ(parseStrategySpec("slo", slo), SpecError::kNone);
  RouteRequest request{&slo, 0, {}, {}};
  request.shape.prompt_tokens = 4096;
  request.shape.max_tokens = 64;
  route(*snapshot_, model(), request, rng_, scratch_);  // warm the scratch
  const switchyard::testing::AllocationScope scope;
  for (int i = 0; i < 100; ++i) {
    request.shape.prompt_tokens = i % 3 ? 64 : 4096;
    route(*snapshot_, model(), request, rng_, scratch_);
  }
  EXPECT_EQ(scope.count(), 0u);
}

}  // namespace
}  // namespace switchyard::routing
