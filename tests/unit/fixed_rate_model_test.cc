#include "engine/fixed_rate_model.h"

#include <gtest/gtest.h>

#include <stdexcept>

namespace switchyard::engine {
namespace {

constexpr TimeNs kMs = 1'000'000;
constexpr TimeNs kSec = 1'000'000'000;

GpuProfile testProfile() {
  // 10 tokens/s decode (100 ms apart), 1000 tokens/s prefill, 20 ms overhead, 1000-token KV.
  return GpuProfile{"TEST", 10, 1000, 20 * kMs, 1000};
}

TEST(FixedRateModelTest, KnownGpusHaveTheirDecodeRates) {
  EXPECT_EQ(findGpuProfile("A10")->decode_tokens_per_s, 25);
  EXPECT_EQ(findGpuProfile("l20")->decode_tokens_per_s, 35);
  EXPECT_EQ(findGpuProfile("V100")->decode_tokens_per_s, 30);
  EXPECT_EQ(findGpuProfile("A100")->decode_tokens_per_s, 60);
  EXPECT_EQ(findGpuProfile("H100")->decode_tokens_per_s, 100);
  EXPECT_EQ(findGpuProfile("B200")->decode_tokens_per_s, 140);
  EXPECT_EQ(FixedRateModel::forGpu("H100")->decodeIntervalNs(), 10 * kMs);
}

TEST(FixedRateModelTest, UnknownGpuIsAStartUpError) {
  EXPECT_FALSE(findGpuProfile("TPU").has_value());
  EXPECT_THROW(FixedRateModel::forGpu("TPU"), std::invalid_argument);
  EXPECT_THROW(FixedRateModel(GpuProfile{"bad", 0, 1, 0, 1}), std::invalid_argument);
}

TEST(FixedRateModelTest, FirstTokenAfterOverheadPlusPrefillThenFixedRate) {
  FixedRateModel model(testProfile());
  const TimeNs t0 = 5 * kSec;
  model.submit({1, 100, 3}, t0);  // ttft = 20 ms + 100 ms
  EXPECT_EQ(model.timeToFirstTokenNs(100), 120 * kMs);
  EXPECT_EQ(model.nextEventTime(), t0 + 120 * kMs);

  std::vector<TokenEvent> events;
  model.advance(t0 + 119 * kMs, events);
  EXPECT_TRUE(events.empty());

  model.advance(t0 + 120 * kMs, events);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].id, 1u);
  EXPECT_EQ(events[0].tokens, 1);
  EXPECT_FALSE(events[0].finished);
  EXPECT_EQ(model.nextEventTime(), t0 + 220 * kMs);

  events.clear();
  model.advance(t0 + 320 * kMs, events);  // tokens 2 and 3 together: a late driver catches up
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].tokens, 2);
  EXPECT_TRUE(events[0].finished);
  EXPECT_EQ(model.nextEventTime(), -1);
  EXPECT_EQ(model.load().running, 0);
}

TEST(FixedRateModelTest, NoBatchingLimitRequestsAreIndependent) {
  FixedRateModel model(testProfile());
  for (RequestId id = 1; id <= 50; ++id) model.submit({id, 0, 2}, 0);
  EXPECT_EQ(model.load().running, 50);
  EXPECT_EQ(model.load().waiting, 0);
  std::vector<TokenEvent> events;
  model.advance(20 * kMs, events);
  ASSERT_EQ(events.size(), 50u);
  for (size_t i = 0; i < events.size(); ++i) EXPECT_EQ(events[i].id, i + 1);  // submit order
  events.clear();
  model.advance(120 * kMs, events);
  EXPECT_EQ(events.size(), 50u);
  EXPECT_EQ(model.load().running, 0);
}

TEST(FixedRateModelTest, KvUsageGrowsWithTokensHeldAndIsReleased) {
  FixedRateModel model(testProfile());
  model.submit({1, 200, 10}, 0);
  EXPECT_DOUBLE_EQ(model.load().kv_usage, 0.2);
  std::vector<TokenEvent> events;
  model.advance(200 * kMs + 20 * kMs, events);  // first token at 220 ms
  EXPECT_DOUBLE_EQ(model.load().kv_usage, 0.201);
  model.advance(520 * kMs, events);  // tokens 1..4
  EXPECT_DOUBLE_EQ(model.load().kv_usage, 0.204);
  model.submit({2, 2000, 10}, 520 * kMs);
  EXPECT_DOUBLE_EQ(model.load().kv_usage, 1.0);  // clamped
  model.cancel(2, 520 * kMs);
  model.cancel(1, 520 * kMs);
  model.cancel(99, 520 * kMs);  // unknown ids are ignored
  EXPECT_DOUBLE_EQ(model.load().kv_usage, 0.0);
  EXPECT_EQ(model.load().running, 0);
}

TEST(FixedRateModelTest, CancelStopsEvents) {
  FixedRateModel model(testProfile());
  model.submit({1, 0, 5}, 0);
  model.submit({2, 0, 5}, 0);
  model.cancel(1, 10 * kMs);
  std::vector<TokenEvent> events;
  model.advance(kSec, events);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].id, 2u);
  EXPECT_EQ(events[0].tokens, 5);
  EXPECT_TRUE(events[0].finished);
}

TEST(FixedRateModelTest, BusySecondsCountOnlyTimeWithWork) {
  FixedRateModel model(testProfile());
  std::vector<TokenEvent> events;
  model.advance(0, events);
  model.advance(kSec, events);  // idle
  EXPECT_DOUBLE_EQ(model.load().busy_seconds_total, 0.0);
  model.submit({1, 0, 2}, kSec);  // tokens at +20 ms and +120 ms
  model.advance(kSec + 120 * kMs, events);
  EXPECT_NEAR(model.load().busy_seconds_total, 0.12, 1e-9);
  model.advance(3 * kSec, events);  // idle again
  EXPECT_NEAR(model.load().busy_seconds_total, 0.12, 1e-9);
  model.advance(2 * kSec, events);  // time never runs backwards
  EXPECT_NEAR(model.load().busy_seconds_total, 0.12, 1e-9);
}

TEST(FixedRateModelTest, ZeroMaxTokensStillProducesOneToken) {
  FixedRateModel model(testProfile());
  model.submit({7, 0, 0}, 0);
  std::vector<TokenEvent> events;
  model.advance(kSec, events);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].tokens, 1);
  EXPECT_TRUE(events[0].finished);
}

}  // namespace
}  // namespace switchyard::engine
