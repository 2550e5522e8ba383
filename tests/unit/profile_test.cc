#include "profile/profile.h"

#include <gtest/gtest.h>

#include <cmath>

#include "allocation_count.h"
#include "profile/profile_json.h"
#include "profile/raw_profile.h"
#include "profile/step_stats.h"
#include "profile/sweep_plan.h"

namespace switchyard::profile {
namespace {

Step makeStep(double rate, double concurrency, double tpot_p99, double ttft_mean) {
  Step s;
  s.offered_rps = rate;
  s.achieved_rps = rate;
  s.mean_concurrency = concurrency;
  s.requests = 100;
  s.tpot = {tpot_p99 / 2, tpot_p99 / 2, tpot_p99 * 0.8, tpot_p99};
  s.ttft = {ttft_mean, ttft_mean, ttft_mean * 2, ttft_mean * 3};
  s.e2e = {1, 1, 1.5, 2};
  return s;
}

// outputs {16, 64} x prompts {128, 512}.
GpuProfile twoByTwo() {
  GpuProfile p;
  p.gpu = "A10";
  p.deployment = "m-a10";
  p.model = "m";
  p.cost = 1.5;
  p.created = 1700000000.5;
  p.slo = Slo{0, 0.05, 0, 99};
  p.outputs = {16, 64};
  p.prompts = {128, 512};
  p.tputs = {{8, 4}, {2, 1}};
  p.steps.assign(2, std::vector<std::vector<Step>>(2));
  p.steps[0][0] = {makeStep(1, 1, 0.02, 0.1), makeStep(4, 3, 0.03, 0.2), makeStep(8, 9, 0.05, 0.5)};
  p.index();
  return p;
}

TEST(SloTest, ParsesKindsUnitsAndCombinations) {
  std::string error;
  auto slo = Slo::parse("tpot=50ms", &error);
  ASSERT_TRUE(slo);
  EXPECT_DOUBLE_EQ(slo->tpot, 0.05);
  EXPECT_EQ(slo->ttft, 0);
  slo = Slo::parse("ttft=1.5s,e2e=20,tpot=200us", &error);
  ASSERT_TRUE(slo);
  EXPECT_DOUBLE_EQ(slo->ttft, 1.5);
  EXPECT_DOUBLE_EQ(slo->e2e, 20);
  EXPECT_DOUBLE_EQ(slo->tpot, 0.0002);
  for (const char* bad :
       {"", "tpot", "tpot=", "tpot=-1ms", "tpot=abc", "latency=5s", "tpot=5ms,"}) {
    EXPECT_FALSE(Slo::parse(bad, &error)) << bad;
    EXPECT_FALSE(error.empty());
  }
}

TEST(SloTest, MetByUsesThePercentile) {
  Slo slo{0, 0.05, 0, 99};
  EXPECT_TRUE(slo.metBy(makeStep(1, 1, 0.05, 0.1)));
  EXPECT_FALSE(slo.metBy(makeStep(1, 1, 0.051, 0.1)));
  slo.percentile = 50;
  EXPECT_TRUE(slo.metBy(makeStep(1, 1, 0.09, 0.1)));
  EXPECT_EQ(Slo{}.describe(), "none");
  EXPECT_EQ((Slo{0, 0.05, 0, 99}.describe()), "P99 TPOT <= 50 ms");
}

TEST(ProfileTest, MaxRateIsExactOnTheGridAndHarmonicBetween) {
  const GpuProfile p = twoByTwo();
  EXPECT_DOUBLE_EQ(p.maxRate(128, 16), 8);
  EXPECT_DOUBLE_EQ(p.maxRate(512, 64), 1);
  // Half way in log2 between prompts 128 and 512 (= 256): loads 1/8 and 1/4 average to 3/16.
  EXPECT_NEAR(p.maxRate(256, 16), 16.0 / 3.0, 1e-9);
  // Below the grid: the first row and column.
  EXPECT_DOUBLE_EQ(p.maxRate(1, 1), 8);
  // Above the grid: the load grows with the tokens past the last point.
  EXPECT_NEAR(p.maxRate(1024, 64), 0.5, 1e-9);
  EXPECT_NEAR(p.maxRate(512, 256), 0.25, 1e-9);
}

TEST(ProfileTest, AZeroCellMakesTheShapeUnservable) {
  GpuProfile p = twoByTwo();
  p.tputs[1][1] = 0;
  p.index();
  EXPECT_EQ(p.maxRate(512, 64), 0);
  EXPECT_EQ(p.maxRate(300, 40), 0);         // a corner with weight is 0
  EXPECT_DOUBLE_EQ(p.maxRate(128, 64), 2);  // exactly on a servable cell
}

TEST(ProfileTest, PredictInterpolatesBetweenStepsByConcurrency) {
  const GpuProfile p = twoByTwo();
  Prediction at1 = p.predict(128, 16, 1);
  ASSERT_TRUE(at1.valid);
  EXPECT_DOUBLE_EQ(at1.tpot_tail, 0.02);
  Prediction mid = p.predict(128, 16, 2);  // half way between concurrency 1 and 3
  EXPECT_NEAR(mid.tpot_tail, 0.025, 1e-12);
  EXPECT_NEAR(mid.ttft, 0.15, 1e-12);
  Prediction below = p.predict(128, 16, 0);
  EXPECT_DOUBLE_EQ(below.tpot_tail, 0.02);
  // Beyond the last step: along the last two steps (slope 0.02 per 6), never below the last.
  Prediction beyond = p.predict(128, 16, 15);
  EXPECT_NEAR(beyond.tpot_tail, 0.05 + 0.02, 1e-12);
  // Only one cell has steps: a shape between cells uses it alone.
  Prediction blended = p.predict(256, 32, 1);
  ASSERT_TRUE(blended.valid);
  EXPECT_DOUBLE_EQ(blended.tpot_tail, 0.02);
  GpuProfile none = twoByTwo();
  none.steps.clear();
  none.index();
  EXPECT_FALSE(none.predict(128, 16, 1).valid);
  EXPECT_FALSE(none.hasSteps());
}

TEST(ProfileTest, LookupsDoNotAllocate) {
  if (!testing::allocationCounting()) GTEST_SKIP() << "sanitizer build";
  const GpuProfile p = twoByTwo();
  double sink = 0;
  testing::AllocationScope scope;
  for (int i = 1; i < 2000; i += 7) {
    sink += p.maxRate(i, i / 3 + 1);
    sink += p.predict(i, i / 3 + 1, i % 13).tpot;
  }
  EXPECT_EQ(scope.count(), 0u);
  EXPECT_GT(sink, 0);
}

TEST(ProfileJsonTest, RoundTripKeepsEveryField) {
  GpuProfile p = twoByTwo();
  p.e2e = {{1, 2}, {3, 4}};
  p.ttft = {{0.1, 0.2}, {0.3, 0.4}};
  const std::string text = profileToJson(p);
  ProfileParse parsed = parseProfileJson(text);
  ASSERT_TRUE(parsed.profile) << parsed.error;
  const GpuProfile& q = *parsed.profile;
  EXPECT_EQ(q.gpu, "A10");
  EXPECT_EQ(q.deployment, "m-a10");
  EXPECT_EQ(q.model, "m");
  EXPECT_DOUBLE_EQ(q.cost, 1.5);
  EXPECT_DOUBLE_EQ(q.created, 1700000000.5);
  EXPECT_EQ(q.slo, p.slo);
  EXPECT_EQ(q.outputs, p.outputs);
  EXPECT_EQ(q.prompts, p.prompts);
  EXPECT_EQ(q.tputs, p.tputs);
  EXPECT_EQ(q.e2e, p.e2e);
  EXPECT_EQ(q.ttft, p.ttft);
  ASSERT_EQ(q.steps[0][0].size(), 3u);
  EXPECT_DOUBLE_EQ(q.steps[0][0][1].tpot.p99, 0.03);
  EXPECT_DOUBLE_EQ(q.steps[0][0][2].mean_concurrency, 9);
  EXPECT_EQ(q.steps[0][0][0].requests, 100);
  EXPECT_EQ(profileToJson(q), text);
  EXPECT_DOUBLE_EQ(q.maxRate(256, 16), p.maxRate(256, 16));
}

// A -0 in a profile reads as 0, so the profile writes back the way it reads (found by the
// profile_json fuzz target: "-0" was written, then read back as the integer 0).
TEST(ProfileJsonTest, NegativeZeroReadsAsZero) {
  const std::string text = R"({"gpu":"a","tputs":[[1,-0.0],[2,3]],"indexes":[[16,32],[128,256]]})";
  ProfileParse parsed = parseProfileJson(text);
  ASSERT_TRUE(parsed.profile) << parsed.error;
  EXPECT_FALSE(std::signbit(parsed.profile->tputs[0][1]));
  const std::string once = profileToJson(*parsed.profile);
  ProfileParse again = parseProfileJson(once);
  ASSERT_TRUE(again.profile) << again.error;
  EXPECT_EQ(profileToJson(*again.profile), once);
}

TEST(ProfileJsonTest, ImportsAnAibrixProfile) {
  // AIBrix's shape: `gpu` names the deployment, indexes are token counts (floats allowed),
  // slos in seconds with a percentile, mean e2e matrix, no steps.
  const std::string aibrix = R"({"gpu": "deepseek-coder-7b-l20", "cost": 2.5,
    "tputs": [[10.5, 5.25], [2.0, 0.0]], "indexes": [[32.0, 128.0], [256, 1024]],
    "created": 1748888478.25, "e2e": [[0.5, 0.9], [2.0, 4.5]],
    "slos": {"percentile": 99, "e2e": 5.0, "tpat": 0.1}})";
  ProfileParse parsed = parseProfileJson(aibrix);
  ASSERT_TRUE(parsed.profile) << parsed.error;
  const GpuProfile& p = *parsed.profile;
  EXPECT_EQ(p.deployment, "deepseek-coder-7b-l20");
  EXPECT_EQ(p.outputs, (std::vector<int>{32, 128}));
  EXPECT_EQ(p.prompts, (std::vector<int>{256, 1024}));
  EXPECT_DOUBLE_EQ(p.slo.e2e, 5.0);
  EXPECT_EQ(p.slo.percentile, 99);
  EXPECT_DOUBLE_EQ(p.maxRate(256, 32), 10.5);
  EXPECT_EQ(p.maxRate(1024, 128), 0);
  EXPECT_FALSE(p.hasSteps());
}

TEST(ProfileJsonTest, RejectsMalformedProfilesWithAReason) {
  const char* cases[] = {
      "",
      "[]",
      "{",
      R"({"gpu":"a"})",
      R"({"gpu":"a","tputs":[[1]]})",
      R"({"gpu":"a","tputs":[[1]],"indexes":[[1]]})",
      R"({"gpu":"a","tputs":[[1,2]],"indexes":[[16],[128]]})",
      R"({"gpu":"a","tputs":[[1],[2]],"indexes":[[64,16],[128]]})",
      R"({"gpu":"a","tputs":[[-1]],"indexes":[[16],[128]]})",
      R"({"gpu":"a","tputs":[[1]],"indexes":[[16],[128]],"cost":0})",
      R"({"gpu":"a","tputs":[["x"]],"indexes":[[16],[128]]})",
      R"({"gpu":"a","tputs":[[1]],"indexes":[[16],[128]],"slos":{"percentile":42}})",
      R"({"gpu":"a","tputs":[[1]],"indexes":[[16],[128]],"steps":[[[{"offered_rps":-1}]]]})",
      R"({"tputs":[[1]],"indexes":[[16],[128]]})",
      // A percentile far outside int's range (found by the profile_json fuzz target).
      R"({"gpu":"a","tputs":[[1]],"indexes":[[16],[128]],"slos":{"percentile":9e22}})",
      // `steps` not an array (found by the profile_json fuzz target).
      R"({"gpu":"a","tputs":[[1]],"indexes":[[16],[128]],"steps":"m"})",
  };
  for (const char* text : cases) {
    ProfileParse parsed = parseProfileJson(text);
    EXPECT_FALSE(parsed.profile) << text;
    EXPECT_FALSE(parsed.error.empty()) << text;
  }
}

TEST(StepStatsTest, MeasuresTheSteadyWindow) {
  // 10 requests, one per second, each 0.5 s with TTFT 0.1 s and 5 tokens.
  std::vector<RequestTiming> timings;
  for (int i = 0; i < 10; ++i) {
    const int64_t t = static_cast<int64_t>(i) * 1'000'000'000;
    timings.push_back({t, t + 100'000'000, t + 500'000'000, 5, false});
  }
  const Step s = summarizeStep(timings, 1.0);
  // Measured: the arrivals from request 2 (t=2 s) to the last (t=9 s).
  EXPECT_EQ(s.requests, 8);
  EXPECT_NEAR(s.arrival_rps, 1.0, 1e-9);
  EXPECT_NEAR(s.achieved_rps, 1.0, 1e-9);  // completions at 2.5 … 9.5 s
  EXPECT_NEAR(s.mean_concurrency, 0.5, 1e-9);
  EXPECT_NEAR(s.ttft.p99, 0.1, 1e-9);
  EXPECT_NEAR(s.tpot.mean, 0.1, 1e-9);
  EXPECT_NEAR(s.e2e.p50, 0.5, 1e-9);
  EXPECT_NEAR(s.output_tokens_per_s, 5.0, 1e-9);
}

TEST(StepStatsTest, ASaturatedEngineShowsItsCapacity) {
  // Offered 2/s, served one every second: completions lag further and further.
  std::vector<RequestTiming> timings;
  for (int i = 0; i < 20; ++i) {
    const int64_t arrival = static_cast<int64_t>(i) * 500'000'000;
    const int64_t done = static_cast<int64_t>(i + 1) * 1'000'000'000;
    timings.push_back({arrival, done - 100, done, 2, false});
  }
  const Step s = summarizeStep(timings, 2.0);
  EXPECT_NEAR(s.arrival_rps, 2.0, 1e-9);
  EXPECT_NEAR(s.achieved_rps, 1.0, 1e-9);
  EXPECT_FALSE(served(s));
  EXPECT_GT(s.mean_concurrency, 2);
}

TEST(SweepPlanTest, LadderUntilItBreaksThenRefines) {
  SweepSettings settings;
  settings.stop_slo = Slo{0, 0.05, 0, 99};
  settings.growth = 2;
  settings.refine = 2;
  CellSweep sweep(settings, /*unloaded_e2e_s=*/1.0);
  // The engine meets the SLO up to 3 req/s and breaks clearly above 6.
  auto outcome = [](double rate) {
    Step s = makeStep(rate, rate, rate <= 3 ? 0.04 : (rate <= 6 ? 0.07 : 0.2), 0.1);
    return s;
  };
  std::vector<double> rates;
  while (auto rate = sweep.nextRate()) {
    rates.push_back(*rate);
    sweep.record(outcome(*rate));
    ASSERT_LT(rates.size(), 20u);
  }
  // 0.5, 1, 2, 4, 8 (breaks: 0.2 > 2 x 0.05), then sqrt(2*4) = 2.83, then sqrt(2.83*4) = 3.36.
  ASSERT_EQ(rates.size(), 7u);
  EXPECT_DOUBLE_EQ(rates[0], 0.5);
  EXPECT_DOUBLE_EQ(rates[4], 8);
  EXPECT_NEAR(rates[5], std::sqrt(8.0), 1e-9);
  EXPECT_NEAR(rates[6], std::sqrt(std::sqrt(8.0) * 4), 1e-9);
}

TEST(SweepPlanTest, FixedRatesAreRunInOrder) {
  SweepSettings settings;
  settings.rates = {1, 3, 2};
  CellSweep sweep(settings, 1.0);
  std::vector<double> rates;
  while (auto rate = sweep.nextRate()) {
    rates.push_back(*rate);
    sweep.record(makeStep(*rate, 1, 1, 1));
  }
  EXPECT_EQ(rates, (std::vector<double>{1, 3, 2}));
  EXPECT_EQ(settings.requestsFor(0.01), settings.min_requests);
  EXPECT_EQ(settings.requestsFor(1000), settings.max_requests);
}

TEST(RawProfileTest, BuildPicksTheHighestServedRateMeetingTheSlo) {
  RawMeasurements raw;
  raw.model = "m";
  RawCell a{128,
            16,
            true,
            {makeStep(1, 1, 0.02, 0.1), makeStep(4, 3, 0.04, 0.2), makeStep(8, 9, 0.08, 0.5)}};
  RawCell b{512, 16, true, {makeStep(1, 1, 0.06, 0.1)}};
  Step unserved = makeStep(6, 20, 0.03, 3);
  unserved.achieved_rps = 5;  // < 0.9 x 6
  a.steps.push_back(unserved);
  raw.cells = {a, b};
  const GpuProfile p = buildProfile(raw, {"m-a10", "A10", "", 2, 5}, Slo{0, 0.05, 0, 99});
  ASSERT_EQ(p.validate(), "");
  EXPECT_EQ(p.tputs[0][0], 4);
  EXPECT_EQ(p.tputs[0][1], 0);
  EXPECT_EQ(p.model, "m");
  EXPECT_EQ(p.steps[0][0].size(), 4u);
  // Round trip of the raw file.
  std::string error;
  auto again = parseRawJson(rawToJson(raw), &error);
  ASSERT_TRUE(again) << error;
  ASSERT_EQ(again->cells.size(), 2u);
  EXPECT_EQ(again->cells[0].steps.size(), 4u);
  EXPECT_TRUE(again->cells[1].done);
  EXPECT_FALSE(parseRawJson(R"({"cells":[{"prompt_tokens":0,"output_tokens":1}]})", &error));
  EXPECT_FALSE(parseRawJson(R"({"cells":7})", &error));
  EXPECT_FALSE(parseTokenList("1,x"));
  EXPECT_FALSE(parseTokenList("1.5"));
  EXPECT_EQ(*parseTokenList("16,32"), (std::vector<int>{16, 32}));
  EXPECT_FALSE(parseRateList("0"));
}

}  // namespace
}  // namespace switchyard::profile
