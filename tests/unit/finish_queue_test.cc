#include "engine/finish_queue.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <map>

#include "core/rng.h"

namespace switchyard::engine {
namespace {

// Random pushes and pops against an ordered multimap: the top is always a smallest step, and
// every item pushed comes out exactly once.
TEST(FinishQueueTest, PopsInStepOrderAgainstAReference) {
  int items[64] = {};
  FinishQueue<int> queue;
  std::multimap<int64_t, int*> reference;
  Rng rng(5);
  for (int round = 0; round < 20000; ++round) {
    if (rng.below(3) != 0 || reference.empty()) {
      const auto at = static_cast<int64_t>(rng.below(500));
      int* item = &items[rng.below(64)];
      queue.push(at, item);
      reference.emplace(at, item);
    } else {
      ASSERT_FALSE(queue.empty());
      const auto entry = queue.top();
      ASSERT_EQ(entry.at, reference.begin()->first);
      // Equal steps come out in any order: remove this one among them.
      auto [first, last] = reference.equal_range(entry.at);
      bool found = false;
      for (auto it = first; it != last; ++it) {
        if (it->second == entry.item) {
          reference.erase(it);
          found = true;
          break;
        }
      }
      ASSERT_TRUE(found);
      queue.pop();
    }
    ASSERT_EQ(queue.size(), reference.size());
    if (round % 5000 == 4999) {
      queue.clear();
      reference.clear();
      EXPECT_TRUE(queue.empty());
    }
  }
}

// The layout the model relies on: the root in the last 16 bytes of an aligned line, so each
// node's four children share the next lines' boundaries.
TEST(FinishQueueTest, TheRootEndsAnAlignedCacheLine) {
  int item = 0;
  FinishQueue<int> queue;
  for (int i = 0; i < 100; ++i) queue.push(100 - i, &item);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(&queue.top()) % 64, 48u);
  EXPECT_EQ(queue.top().at, 1);
}

}  // namespace
}  // namespace switchyard::engine
