#include "gateway/request_queue.h"

#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>
#include <deque>

namespace switchyard::gateway {
namespace {

struct QueueFixture : ::testing::Test {
  QueueFixture() {
    model.name = "m";
    model.runtime = std::make_shared<fleet::ModelRuntime>();
    model.admission.queue = fleet::QueueMode::kFifo;
    model.admission.max_queued = 4;
    model.admission.max_queued_per_client = 2;
    directory.contexts.push_back(&io);
    directory.queues.push_back(&queue);
  }
  RequestQueue::Waiter& waiter(std::string_view client) {
    waiters.emplace_back(io.get_executor());
    waiters.back().client = client;
    return waiters.back();
  }

  boost::asio::io_context io;
  WorkerDirectory directory;
  RequestQueue queue{0, directory};
  fleet::ModelEntry model;
  std::deque<RequestQueue::Waiter> waiters;
};

TEST_F(QueueFixture, FirstComeFirstServedWithPositionsAndCounts) {
  EXPECT_FALSE(queue.hasWaiters(model));
  RequestQueue::Waiter& a = waiter("alice");
  RequestQueue::Waiter& b = waiter("bob");
  RequestQueue::Waiter& c = waiter("carol");
  ASSERT_EQ(queue.enter(model, a, 1), RequestQueue::Entry::kQueued);
  ASSERT_EQ(queue.enter(model, b, 2), RequestQueue::Entry::kQueued);
  ASSERT_EQ(queue.enter(model, c, 3), RequestQueue::Entry::kQueued);
  EXPECT_TRUE(queue.hasWaiters(model));
  EXPECT_EQ(model.runtime->queued.load(), 3);
  EXPECT_EQ(model.runtime->queued_workers.load(), 1u);
  EXPECT_TRUE(queue.isHead(a));
  EXPECT_EQ(queue.positionOf(c), 2u);
  queue.leave(b);  // a middle one leaves (refused, or its client left)
  EXPECT_EQ(queue.positionOf(c), 1u);
  queue.leave(a);
  EXPECT_TRUE(queue.isHead(c));
  EXPECT_EQ(queue.positionOf(c), 0u);
  queue.leave(c);
  EXPECT_FALSE(queue.hasWaiters(model));
  EXPECT_EQ(model.runtime->queued.load(), 0);
  EXPECT_EQ(model.runtime->queued_workers.load(), 0u);
  queue.leave(c);  // leaving twice is harmless
  EXPECT_EQ(model.runtime->queued.load(), 0);
}

TEST_F(QueueFixture, BoundedInTotalAndPerClient) {
  ASSERT_EQ(queue.enter(model, waiter("alice"), 1), RequestQueue::Entry::kQueued);
  ASSERT_EQ(queue.enter(model, waiter("alice"), 1), RequestQueue::Entry::kQueued);
  EXPECT_EQ(queue.enter(model, waiter("alice"), 1), RequestQueue::Entry::kClientFull);
  ASSERT_EQ(queue.enter(model, waiter("bob"), 1), RequestQueue::Entry::kQueued);
  ASSERT_EQ(queue.enter(model, waiter("carol"), 1), RequestQueue::Entry::kQueued);
  EXPECT_EQ(queue.enter(model, waiter("dave"), 1), RequestQueue::Entry::kFull);
  EXPECT_EQ(model.runtime->queued.load(), 4);
  queue.leave(waiters[0]);
  EXPECT_EQ(queue.enter(model, waiter("alice"), 2), RequestQueue::Entry::kQueued);
  for (auto& w : waiters) queue.leave(w);
  EXPECT_EQ(model.runtime->queued.load(), 0);
}

TEST_F(QueueFixture, AFreedSlotWakesTheHeadOnly) {
  RequestQueue::Waiter& a = waiter("alice");
  RequestQueue::Waiter& b = waiter("bob");
  ASSERT_EQ(queue.enter(model, a, 1), RequestQueue::Entry::kQueued);
  ASSERT_EQ(queue.enter(model, b, 1), RequestQueue::Entry::kQueued);
  int a_woken = 0;
  int b_woken = 0;
  a.timer.expires_after(std::chrono::hours(1));
  b.timer.expires_after(std::chrono::hours(1));
  a.timer.async_wait([&](const boost::system::error_code& ec) { a_woken += ec ? 1 : 0; });
  b.timer.async_wait([&](const boost::system::error_code& ec) { b_woken += ec ? 1 : 0; });
  queue.slotFreed(model);
  io.poll();
  EXPECT_EQ(a_woken, 1);
  EXPECT_EQ(b_woken, 0);
  // The head leaves (admitted): the next one is woken at once to try the remaining room.
  queue.leave(a);
  io.poll();
  EXPECT_EQ(b_woken, 1);
  queue.leave(b);
}

TEST_F(QueueFixture, NoWaitersMeansNothingToWake) {
  queue.slotFreed(model);  // one relaxed load, no effect
  EXPECT_EQ(io.poll(), 0u);
}

}  // namespace
}  // namespace switchyard::gateway
