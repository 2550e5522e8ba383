#include "engine/virtual_run.h"

#include <gtest/gtest.h>

#include "engine/batching_model.h"
#include "profile/emulated_profile.h"
#include "profile/raw_profile.h"

namespace switchyard {
namespace {

engine::PerfConfig a10() {
  return engine::makePerfConfig(engine::builtinProfiles(), "A10", "llama2-7b");
}

TEST(VirtualRunTest, OneRequestTakesPrefillThenOneStepPerToken) {
  const engine::PerfConfig config = a10();
  const engine::BatchingModel model(config);
  const engine::VirtualArrival one{1'000, 512, 8};
  const auto out = engine::runVirtual(config, std::span(&one, 1));
  ASSERT_EQ(out.size(), 1u);
  ASSERT_TRUE(out[0].done());
  EXPECT_EQ(out[0].output_tokens, 8);
  EXPECT_EQ(out[0].first_token - out[0].arrival, model.stepDurationNs(512, 512));
  EXPECT_GT(out[0].tpotSeconds(), 0);
  EXPECT_NEAR(out[0].e2eSeconds(), out[0].ttftSeconds() + 7 * out[0].tpotSeconds(), 1e-9);
}

TEST(VirtualRunTest, SameArrivalsSameOutcomesAndTheHorizonStops) {
  const auto arrivals = engine::poissonArrivals(20, 200, 256, 32, 7);
  ASSERT_EQ(arrivals.size(), 200u);
  const auto a = engine::runVirtual(a10(), arrivals);
  const auto b = engine::runVirtual(a10(), arrivals);
  for (size_t i = 0; i < a.size(); ++i) {
    ASSERT_TRUE(a[i].done());
    EXPECT_EQ(a[i].finished, b[i].finished);
  }
  const auto cut = engine::runVirtual(a10(), arrivals, arrivals[50].at);
  EXPECT_FALSE(cut.back().done());
  EXPECT_EQ(cut.back().arrival, arrivals.back().at);
}

TEST(EmulatedProfileTest, RatesFallWithLongerPromptsAndL20DecodesFaster) {
  profile::EmulatedSweepOptions options;
  options.prompts = {128, 256};
  options.outputs = {128};
  options.sweep.stop_slo = profile::Slo{0, 0.05, 0, 99};
  options.sweep.min_requests = 200;
  options.sweep.max_requests = 400;
  const auto raw_a10 = profile::sweepEmulated(a10(), options);
  const auto raw_l20 = profile::sweepEmulated(
      engine::makePerfConfig(engine::builtinProfiles(), "L20", "llama2-7b"), options);
  const auto a = profile::buildProfile(raw_a10, {"a10", "A10", "", 1, 0}, options.sweep.stop_slo);
  const auto l = profile::buildProfile(raw_l20, {"l20", "L20", "", 1, 0}, options.sweep.stop_slo);
  ASSERT_EQ(a.validate(), "");
  EXPECT_GT(a.maxRate(128, 128), a.maxRate(256, 128));
  EXPECT_GT(a.maxRate(256, 128), 0);
  // Decoding is bandwidth-bound: the L20's 864 GB/s beat the A10's 600 GB/s.
  EXPECT_GT(l.maxRate(128, 128), a.maxRate(128, 128));
  for (const auto& cell : raw_a10.cells) {
    EXPECT_TRUE(cell.done);
    EXPECT_GE(cell.steps.size(), 3u);
  }
  EXPECT_TRUE(a.predict(128, 128, 4).valid);
  // Deterministic for a seed.
  EXPECT_EQ(profile::rawToJson(raw_a10),
            profile::rawToJson(profile::sweepEmulated(a10(), options)));
}

}  // namespace
}  // namespace switchyard
