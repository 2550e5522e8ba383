// writeAll: a whole gather write, sent at once when asked and awaited otherwise, over a real
// loopback TCP pair; what the socket cannot take at once is awaited, in order.
#include "http/write_all.h"

#include <gtest/gtest.h>

#include <array>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/read.hpp>
#include <optional>
#include <string>
#include <thread>

#include "loopback_pair.h"

namespace switchyard::http {
namespace {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;

class WriteAllTest : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override {
    auto [near, far] = switchyard::testing::connectLoopback(io);
    peer.emplace(std::move(far));
    stream.emplace(std::move(near));
  }

  // Writes `pieces` through writeAll (at once or not, the test's parameter) while a thread reads
  // `expected_size` bytes at the peer: what the peer read.
  template <class Buffers>
  std::string writeAndRead(const Buffers& pieces, size_t expected_size) {
    std::string received(expected_size, '\0');
    std::thread reader([&] { asio::read(*peer, asio::buffer(received)); });
    asio::co_spawn(
        io,
        [&]() -> asio::awaitable<void> {
          auto [ec, n] = co_await writeAll(*stream, pieces, GetParam());
          write_ec = ec;
          written = n;
        },
        asio::detached);
    io.run();
    reader.join();
    return received;
  }

  asio::io_context io;
  std::optional<tcp::socket> peer;
  std::optional<ConnectionStream> stream;
  boost::system::error_code write_ec;
  size_t written = 0;
};

TEST_P(WriteAllTest, ASmallGatherWriteArrivesWholeAndInOrder) {
  const std::array<asio::const_buffer, 2> pieces = {asio::buffer("POST / HTTP/1.1\r\n\r\n", 19),
                                                    asio::buffer("{}", 2)};
  EXPECT_EQ(writeAndRead(pieces, 21), std::string("POST / HTTP/1.1\r\n\r\n{}"));
  EXPECT_FALSE(write_ec) << write_ec.message();
  EXPECT_EQ(written, 21u);
}

TEST_P(WriteAllTest, WhatTheSocketCannotTakeAtOnceIsAwaitedInOrder) {
  std::string head(1000, 'h');
  std::string body(32 << 20, 'b');  // far beyond loopback's socket buffers
  body.back() = 'e';
  const std::array<asio::const_buffer, 2> pieces = {asio::buffer(head), asio::buffer(body)};
  const std::string received = writeAndRead(pieces, head.size() + body.size());
  EXPECT_FALSE(write_ec) << write_ec.message();
  EXPECT_EQ(written, head.size() + body.size());
  EXPECT_TRUE(received == head + body);
}

TEST_P(WriteAllTest, APeerThatClosedFailsTheWrite) {
  peer->close();
  const std::string body(8 << 20, 'b');
  asio::co_spawn(
      io,
      [&]() -> asio::awaitable<void> {
        auto [ec, n] = co_await writeAll(*stream, asio::buffer(body), GetParam());
        write_ec = ec;
      },
      asio::detached);
  io.run();
  EXPECT_TRUE(write_ec);  // reset or broken pipe, never a crash (no SIGPIPE)
}

INSTANTIATE_TEST_SUITE_P(AtOnceOrAwaited, WriteAllTest, ::testing::Bool());

}  // namespace
}  // namespace switchyard::http
