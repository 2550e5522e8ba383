// TimedSocket: one deadline per connection with Beast's semantics, over a real loopback TCP pair.
#include "http/timed_socket.h"

#include <gtest/gtest.h>

#include <array>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>
#include <chrono>
#include <optional>
#include <string>

#include "loopback_pair.h"

namespace switchyard::http {
namespace {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using namespace std::chrono_literals;

// A connected loopback pair: `timed` under test, `peer` the other end.
class TimedSocketTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto [near, far] = switchyard::testing::connectLoopback(io);
    peer.emplace(std::move(far));
    timed.emplace(std::move(near));
  }

  // Starts a one-byte read on `timed`; its outcome lands in `read_ec` / `read_at`.
  void startRead() {
    timed->async_read_some(asio::buffer(&byte, 1), [this](boost::system::error_code ec, size_t) {
      read_ec = ec;
      read_at = std::chrono::steady_clock::now();
    });
  }
  // Sends one byte from the peer after `delay`.
  void sendAfter(std::chrono::milliseconds delay) {
    auto timer = std::make_shared<asio::steady_timer>(io, delay);
    timer->async_wait(
        [this, timer](boost::system::error_code) { asio::write(*peer, asio::buffer("x", 1)); });
  }
  // Runs the loop until the read completed or `limit` passed.
  void runFor(std::chrono::milliseconds limit) {
    io.restart();
    const auto until = std::chrono::steady_clock::now() + limit;
    while (!read_ec && std::chrono::steady_clock::now() < until) io.run_one_for(10ms);
  }
  // Reads one byte (the loop runs up to 2 s): how the read ended ("no answer" if it did not).
  boost::system::error_code readOne() {
    read_ec.reset();
    startRead();
    runFor(2s);
    return read_ec.value_or(asio::error::would_block);
  }

  asio::io_context io;
  std::optional<tcp::socket> peer;
  std::optional<TimedSocket> timed;
  char byte = 0;
  std::optional<boost::system::error_code> read_ec;
  std::chrono::steady_clock::time_point read_at;
};

TEST_F(TimedSocketTest, APendingReadFailsWithTimeoutWhenTheDeadlinePasses) {
  const auto start = std::chrono::steady_clock::now();
  timed->expires_after(50ms);
  const boost::system::error_code ec = readOne();
  EXPECT_EQ(ec, boost::beast::error::timeout) << ec.message();
  EXPECT_GE(read_at - start, 50ms);
  EXPECT_FALSE(timed->socket().is_open());  // closed, as Beast's tcp_stream does
}

TEST_F(TimedSocketTest, ADeadlineMovedLaterBeforeEachReadBoundsOnlyThatRead) {
  // Each read gets 150 ms; the second byte comes 240 ms after the first deadline was set, within
  // the second read's own 150 ms.
  timed->expires_after(150ms);
  sendAfter(100ms);
  ASSERT_FALSE(readOne());
  timed->expires_after(150ms);
  sendAfter(140ms);
  const boost::system::error_code ec = readOne();
  EXPECT_FALSE(ec) << ec.message();
}

TEST_F(TimedSocketTest, ADeadlineThatPassedWhileIdleFailsTheNextOperationUnlessRenewed) {
  timed->expires_after(20ms);
  io.run_for(80ms);  // the deadline passes with nothing pending
  timed->expires_after(200ms);
  sendAfter(20ms);
  boost::system::error_code ec = readOne();
  EXPECT_FALSE(ec) << "a renewed deadline starts afresh: " << ec.message();

  timed->expires_after(20ms);
  io.restart();
  io.run_for(80ms);
  ec = readOne();  // no new deadline: the lapsed one fails it at once
  EXPECT_EQ(ec, boost::beast::error::timeout) << ec.message();
}

TEST_F(TimedSocketTest, ExpiresNeverLiftsTheDeadline) {
  timed->expires_after(30ms);
  timed->expires_never();
  sendAfter(200ms);
  const boost::system::error_code ec = readOne();
  EXPECT_FALSE(ec) << ec.message();
}

TEST_F(TimedSocketTest, CancelEndsAPendingReadAsAbortedNotTimedOut) {
  timed->expires_after(1s);
  asio::steady_timer later(io, 20ms);
  later.async_wait([this](boost::system::error_code) { timed->cancel(); });
  const boost::system::error_code ec = readOne();
  EXPECT_EQ(ec, asio::error::operation_aborted) << ec.message();
  EXPECT_TRUE(timed->socket().is_open());
}

TEST_F(TimedSocketTest, WriteNowSendsAGatherWriteWithoutTheLoop) {
  const std::array<asio::const_buffer, 3> pieces = {asio::buffer("head|", 5),
                                                    asio::const_buffer(),  // skipped
                                                    asio::buffer("body", 4)};
  EXPECT_EQ(timed->writeNow(pieces), 9u);  // io never ran
  std::array<char, 9> got{};
  asio::read(*peer, asio::buffer(got));
  EXPECT_EQ(std::string(got.data(), got.size()), "head|body");
}

TEST_F(TimedSocketTest, WriteNowSendsNothingOnceTheDeadlineLapsed) {
  timed->expires_after(20ms);
  io.run_for(80ms);  // lapsed while idle: the next operation must fail as timed out
  EXPECT_EQ(timed->writeNow(asio::buffer("x", 1)), 0u);
  const boost::system::error_code ec = readOne();
  EXPECT_EQ(ec, boost::beast::error::timeout) << ec.message();
}

TEST_F(TimedSocketTest, WriteNowStopsWhereTheSocketIsFullAndNeverBlocks) {
  const std::string big(64 << 20, 'x');  // far beyond loopback's socket buffers
  const size_t sent = timed->writeNow(asio::buffer(big));
  EXPECT_GT(sent, 0u);
  EXPECT_LT(sent, big.size());
  EXPECT_EQ(timed->writeNow(asio::buffer(big)), 0u);  // full: would block, returns at once
}

TEST_F(TimedSocketTest, DestroyedWithItsTimerArmedIsHarmless) {
  timed->expires_after(20ms);
  timed.reset();
  io.run_for(60ms);  // the timer's handler runs after the socket is gone
  SUCCEED();
}

}  // namespace
}  // namespace switchyard::http
