#include "core/rng.h"

#include <gtest/gtest.h>

#include <array>

namespace switchyard {
namespace {

TEST(RngTest, BelowStaysInRangeAndCoversIt) {
  Rng rng(42);
  std::array<int, 7> seen{};
  for (int i = 0; i < 7000; ++i) {
    uint32_t v = rng.below(7);
    ASSERT_LT(v, 7u);
    ++seen[v];
  }
  for (int count : seen) EXPECT_GT(count, 800);
}

TEST(RngTest, SameSeedSameSequence) {
  Rng a(7), b(7);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(a.next(), b.next());
}

}  // namespace
}  // namespace switchyard
