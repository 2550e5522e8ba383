#include "sim/event_queue.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <set>
#include <tuple>

#include "core/rng.h"

namespace switchyard::sim {
namespace {

using Key = std::tuple<TimeNs, uint64_t>;  // time, then the order pushed

// Random pushes and pops, with pops followed by a push half of the time (the deferred pop's
// shortcut), against an ordered set: every event comes out once, by time and then by the order
// it was pushed, size() and empty() see the popped event gone, and right after a pop
// peekAfterPop() names the event the next pop returns if nothing is pushed first.
TEST(EventQueueTest, PopsByTimeThenOrderPushedAgainstAReference) {
  EventQueue queue;
  std::set<Key> reference;
  Rng rng(11);
  TimeNs now = 0;
  uint64_t pushed = 0;
  auto push = [&] {
    const TimeNs at = now + static_cast<TimeNs>(rng.below(50));  // many ties
    queue.push(at, 7, static_cast<uint32_t>(pushed % 1000), pushed);
    reference.emplace(at, pushed++);
  };
  for (int round = 0; round < 50000; ++round) {
    if (rng.below(3) == 0 || reference.empty()) {
      push();
      continue;
    }
    ASSERT_FALSE(queue.empty());
    ASSERT_EQ(queue.top().arg, std::get<1>(*reference.begin()));
    const Event event = queue.pop();
    ASSERT_EQ(Key(event.time, event.arg), *reference.begin());
    EXPECT_EQ(event.kind, 7u);
    EXPECT_EQ(event.target, event.arg % 1000);
    reference.erase(reference.begin());
    // The guess at the next event is the next event while nothing is pushed.
    const Event* next = queue.peekAfterPop();
    if (reference.empty()) {
      EXPECT_EQ(next, nullptr);
    } else {
      ASSERT_NE(next, nullptr);
      EXPECT_EQ(Key(next->time, next->arg), *reference.begin());
    }
    now = event.time;
    if (rng.below(2) == 0) push();
    ASSERT_EQ(queue.size(), reference.size());
  }
  while (!queue.empty()) {
    ASSERT_EQ(Key(queue.top().time, queue.top().arg), *reference.begin());
    queue.pop();
    reference.erase(reference.begin());
  }
  EXPECT_TRUE(reference.empty());
  EXPECT_EQ(queue.pushed(), pushed);
}

// The last event popped and nothing pushed after it: the queue is empty.
TEST(EventQueueTest, TheLastPopLeavesItEmpty) {
  EventQueue queue;
  queue.push(5, 1);
  EXPECT_EQ(queue.pop().time, 5);
  EXPECT_TRUE(queue.empty());
  EXPECT_EQ(queue.size(), 0u);
  queue.push(3, 2);  // takes the popped event's place
  EXPECT_EQ(queue.size(), 1u);
  EXPECT_EQ(queue.pop().kind, 2u);
  EXPECT_TRUE(queue.empty());
}

}  // namespace
}  // namespace switchyard::sim
