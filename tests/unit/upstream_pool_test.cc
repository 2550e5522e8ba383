// UpstreamPool: a worker's idle keep-alive connections, on real loopback sockets. A connection
// the pool closes is seen closed from its far end (a read finds the end of the stream).
#include "gateway/upstream_pool.h"

#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>
#include <memory>
#include <vector>

#include "gateway/config.h"
#include "loopback_pair.h"

namespace switchyard::gateway {
namespace {

using boost::asio::ip::tcp;

class UpstreamPoolTest : public ::testing::Test {
 protected:
  static constexpr TimeNs kMaxIdle = 4 * kNsPerSec;

  // A pooled-to-be connection; its far end is kept to see whether the pool closed it.
  UpstreamPool::Stream connect() {
    testing::LoopbackPair pair = testing::connectLoopback(io_);
    far_.push_back(std::move(pair.far));
    return std::make_unique<http::ConnectionStream>(std::move(pair.near));
  }
  // Whether the pool closed the connection whose far end is far_[i].
  bool closedByPool(size_t i) {
    char byte = 0;
    boost::system::error_code ec;
    far_[i].non_blocking(true);
    far_[i].read_some(boost::asio::buffer(&byte, 1), ec);
    return ec == boost::asio::error::eof;
  }

  boost::asio::io_context io_;
  std::vector<tcp::socket> far_;
  std::shared_ptr<fleet::ReplicaState> a_ = std::make_shared<fleet::ReplicaState>("a", "h", 1);
  std::shared_ptr<fleet::ReplicaState> b_ = std::make_shared<fleet::ReplicaState>("b", "h", 2);
};

TEST_F(UpstreamPoolTest, TheConnectionReturnedLastIsReusedFirst) {
  UpstreamPool pool(kMaxIdle, 8);
  pool.give(a_, connect(), 0);
  UpstreamPool::Stream second = connect();
  const http::ConnectionStream* warmest = second.get();
  pool.give(a_, std::move(second), 1);
  EXPECT_EQ(pool.idleCount(), 2u);
  EXPECT_EQ(pool.take(a_.get(), 2).get(), warmest);
  EXPECT_EQ(pool.take(b_.get(), 2), nullptr);  // pooled for another replica only
  EXPECT_EQ(pool.idleCount(), 1u);
}

TEST_F(UpstreamPoolTest, AConnectionAboveTheCapIsClosedAndTheOthersKept) {
  UpstreamPool pool(kMaxIdle, 3);
  for (int i = 0; i < 4; ++i) pool.give(a_, connect(), 0);
  EXPECT_EQ(pool.idleCount(), 3u);
  EXPECT_FALSE(closedByPool(0));
  EXPECT_FALSE(closedByPool(2));
  EXPECT_TRUE(closedByPool(3));
  // The cap is per replica: another replica's connections are pooled beside them.
  for (int i = 0; i < 3; ++i) pool.give(b_, connect(), 0);
  EXPECT_EQ(pool.idleCount(), 6u);
}

TEST_F(UpstreamPoolTest, ManyRequestsInFlightToOneReplicaAllGoBackToTheDefaultPool) {
  // A worker with 300 requests in flight to one replica returns 300 connections when they end;
  // the default cap keeps them all, so the next 300 requests connect no more.
  const GatewayConfig defaults;
  UpstreamPool pool(kMaxIdle, defaults.upstream_idle_per_replica);
  for (int i = 0; i < 300; ++i) pool.give(a_, connect(), 0);
  EXPECT_EQ(pool.idleCount(), 300u);
  for (int i = 0; i < 300; ++i) EXPECT_NE(pool.take(a_.get(), 1), nullptr);
}

TEST_F(UpstreamPoolTest, AConnectionIdleTooLongIsClosedInsteadOfReused) {
  UpstreamPool pool(kMaxIdle, 8);
  pool.give(a_, connect(), 0);
  EXPECT_EQ(pool.take(a_.get(), kMaxIdle), nullptr);
  EXPECT_TRUE(closedByPool(0));
  EXPECT_EQ(pool.idleCount(), 0u);
}

TEST_F(UpstreamPoolTest, SweepClosesWhatIdledTooLongAndKeepsTheRest) {
  UpstreamPool pool(kMaxIdle, 8);
  pool.give(a_, connect(), 0);
  pool.give(b_, connect(), kMaxIdle / 2);
  pool.sweep(kMaxIdle);
  EXPECT_TRUE(closedByPool(0));
  EXPECT_FALSE(closedByPool(1));
  EXPECT_EQ(pool.idleCount(), 1u);
  EXPECT_NE(pool.take(b_.get(), kMaxIdle), nullptr);
}

}  // namespace
}  // namespace switchyard::gateway
