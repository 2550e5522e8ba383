// PeerWatch and its deferred arming, over a real loopback TCP pair: a peer that leaves is noticed,
// at once or once the work has lasted the arming's delay, and work that ends sooner starts no
// wait at all.
#include "http/peer_watch.h"

#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/write.hpp>
#include <chrono>
#include <optional>

namespace switchyard::http {
namespace {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

void countGone(void* counter) { ++*static_cast<int*>(counter); }

class PeerWatchTest : public ::testing::Test {
 protected:
  void SetUp() override {
    tcp::acceptor acceptor(io, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
    peer.emplace(io);
    peer->connect(acceptor.local_endpoint());
    watched.emplace(acceptor.accept());
  }
  // Runs the loop for `span`, or until the watch has seen the peer leave.
  void runFor(std::chrono::milliseconds span) {
    io.restart();
    const auto until = Clock::now() + span;
    while (!watch->gone && Clock::now() < until) io.run_one_for(5ms);
  }

  asio::io_context io;
  std::optional<tcp::socket> peer;
  std::optional<tcp::socket> watched;
  std::shared_ptr<PeerWatch> watch = std::make_shared<PeerWatch>();
  PeerWatchArming arming{io.get_executor(), 50ms};
  int gone_calls = 0;
};

TEST_F(PeerWatchTest, WithoutAnArmingThePeerLeavingIsSeenAtOnce) {
  const PeerWatchScope scope(watch, *watched, &countGone, &gone_calls);
  peer->close();
  runFor(2s);
  EXPECT_TRUE(watch->gone);
  EXPECT_EQ(gone_calls, 1);
}

TEST_F(PeerWatchTest, ADeferredWatchSeesAPeerThatLeftBeforeItsWaitBegan) {
  const auto armed_at = Clock::now();
  const PeerWatchScope scope(watch, *watched, &countGone, &gone_calls, {&arming, 0ms});
  peer->close();  // leaves at once: nothing watches yet
  runFor(20ms);
  EXPECT_FALSE(watch->gone);
  EXPECT_EQ(arming.waitsStarted(), 0u);
  runFor(2s);
  EXPECT_TRUE(watch->gone);
  EXPECT_EQ(gone_calls, 1);
  EXPECT_EQ(arming.waitsStarted(), 1u);
  EXPECT_GE(Clock::now() - armed_at, 50ms);
}

TEST_F(PeerWatchTest, WorkThatEndsBeforeTheDelayStartsNoWait) {
  for (int request = 0; request < 5; ++request) {
    const PeerWatchScope scope(watch, *watched, &countGone, &gone_calls, {&arming, 0ms});
    runFor(5ms);
  }
  runFor(150ms);  // past every deferred start
  EXPECT_EQ(arming.waitsStarted(), 0u);
  peer->close();
  runFor(50ms);
  EXPECT_FALSE(watch->gone);  // nothing was armed when the peer left
  EXPECT_EQ(gone_calls, 0);
}

TEST_F(PeerWatchTest, WorkThatHasLastedTheDelayIsWatchedAtOnce) {
  const PeerWatchScope scope(watch, *watched, &countGone, &gone_calls, {&arming, 60ms});
  EXPECT_EQ(arming.waitsStarted(), 1u);
  peer->close();
  runFor(2s);
  EXPECT_TRUE(watch->gone);
}

TEST_F(PeerWatchTest, ShortArmingsOfOneLongWaitAddUpToTheDelay) {
  // As a queued request re-checks every 20 ms, each re-check a new arming whose `lasted`
  // counts from the request's arrival: the wait begins once the request has lasted the delay.
  const auto arrived = Clock::now();
  peer->close();
  for (int recheck = 0; recheck < 10 && !watch->gone; ++recheck) {
    const PeerWatchScope scope(
        watch, *watched, &countGone, &gone_calls,
        {&arming, std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - arrived)});
    runFor(20ms);
  }
  EXPECT_TRUE(watch->gone);
  EXPECT_EQ(gone_calls, 1);
}

TEST_F(PeerWatchTest, DataFromThePeerIsNotLeaving) {
  const PeerWatchScope scope(watch, *watched, &countGone, &gone_calls, {&arming, 60ms});
  asio::write(*peer, asio::buffer("GET", 3));
  runFor(100ms);
  EXPECT_FALSE(watch->gone);
  EXPECT_EQ(gone_calls, 0);
}

}  // namespace
}  // namespace switchyard::http
