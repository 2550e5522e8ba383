#include "admission/inflight_slots.h"

#include <gtest/gtest.h>

#include <string_view>
#include <vector>

namespace switchyard::admission {
namespace {

TEST(InflightSlotsTest, TheLeadIsTheConfiguredOneUpToAnEighthOfAWorkersShare) {
  EXPECT_EQ(InflightSlots::lead(100000, 3, 2, 16), 16);
  EXPECT_EQ(InflightSlots::lead(480, 3, 2, 16), 10);  // 480 / (8 × 6)
  EXPECT_EQ(InflightSlots::lead(40, 3, 2, 16), 0);    // small limits: no slot leased ahead
  EXPECT_EQ(InflightSlots::lead(100, 0, 0, 16), 12);  // unknown counts read as one
  EXPECT_EQ(InflightSlots::lead(100000, 1, 1, 0), 0);
}

TEST(InflightSlotsTest, RequestsTakeLeasedSlotsUntilNoneIsFree) {
  InflightSlots slots;
  EXPECT_FALSE(slots.take("m", "r"));           // nothing leased yet
  EXPECT_EQ(slots.granted("m", "r", 3, 3), 0);  // a request leased 3 and took one
  EXPECT_TRUE(slots.take("m", "r"));
  EXPECT_TRUE(slots.take("m", "r"));
  EXPECT_FALSE(slots.take("m", "r"));
  EXPECT_EQ(slots.lease("m", "r").held, 3);
  EXPECT_EQ(slots.lease("m", "r").used, 3);
  // Another model's replica of the same name has its own lease.
  EXPECT_FALSE(slots.take("other", "r"));
}

TEST(InflightSlotsTest, SlotsGoBackPastTwiceTheLeadAndAllAfterAnIdleSweep) {
  InflightSlots slots;
  slots.granted("m", "r", 10, 10);
  for (int i = 0; i < 9; ++i) ASSERT_TRUE(slots.take("m", "r"));
  // 10 in flight, lead 2: unused slots are kept up to 4, then trimmed back to 2.
  for (int i = 0; i < 4; ++i) EXPECT_EQ(slots.put("m", "r", 2), 0);
  EXPECT_EQ(slots.put("m", "r", 2), 3);  // 5 unused: back to 2
  EXPECT_EQ(slots.lease("m", "r").held, 7);
  EXPECT_EQ(slots.lease("m", "r").used, 5);
  int64_t back = 0;
  for (int i = 0; i < 4; ++i) back += slots.put("m", "r", 2);
  EXPECT_EQ(back, 3);
  EXPECT_EQ(slots.lease("m", "r").used, 1);
  EXPECT_EQ(slots.lease("m", "r").held, 4);
  EXPECT_EQ(slots.put("m", "r", 2), 0);  // nothing in flight: up to twice the lead stays...
  EXPECT_EQ(slots.lease("m", "r").held, 4);
  std::vector<int64_t> swept;
  const auto collect = [&](std::string_view, std::string_view, int64_t n) { swept.push_back(n); };
  slots.sweep(collect);  // ...through a sweep that follows requests...
  EXPECT_TRUE(swept.empty());
  slots.sweep(collect);  // ...and goes back at the next one if no request came
  EXPECT_EQ(swept, std::vector<int64_t>{4});
  EXPECT_EQ(slots.lease("m", "r").held, 0);
  EXPECT_EQ(slots.replicasTracked(), 0u);  // forgotten: replicas come and go
}

TEST(InflightSlotsTest, ASweepLeavesLeasesInUseAlone) {
  InflightSlots slots;
  slots.granted("m", "r", 3, 3);
  int calls = 0;
  const auto count = [&](std::string_view, std::string_view, int64_t) { ++calls; };
  slots.sweep(count);
  slots.sweep(count);
  EXPECT_EQ(calls, 0);
  EXPECT_EQ(slots.lease("m", "r").held, 3);
}

TEST(InflightSlotsTest, WithNoLeadEveryEndedRequestGivesItsSlotBack) {
  InflightSlots slots;
  slots.granted("m", "r", 1, 1);
  slots.granted("m", "r", 1, 2);
  EXPECT_EQ(slots.put("m", "r", 0), 1);
  EXPECT_EQ(slots.put("m", "r", 0), 1);
  EXPECT_EQ(slots.lease("m", "r").held, 0);
}

TEST(InflightSlotsTest, SlotsSharedStateLostAreReportedForLeasingAgain) {
  InflightSlots slots;
  slots.granted("m", "r", 4, 4);
  // Shared state restarted empty: the next grant finds the field at 2 though 6 are leased.
  EXPECT_EQ(slots.granted("m", "r", 2, 2), 4);
}

}  // namespace
}  // namespace switchyard::admission
