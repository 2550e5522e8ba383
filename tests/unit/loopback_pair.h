// A connected loopback TCP pair for tests of the socket layer: `near` is the side under test
// (the connecting one), `far` the accepted other end.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <utility>

namespace switchyard::testing {

struct LoopbackPair {
  boost::asio::ip::tcp::socket near;
  boost::asio::ip::tcp::socket far;
};

inline LoopbackPair connectLoopback(boost::asio::io_context& io) {
  using boost::asio::ip::tcp;
  tcp::acceptor acceptor(io, tcp::endpoint(boost::asio::ip::make_address("127.0.0.1"), 0));
  tcp::socket near(io);
  near.connect(acceptor.local_endpoint());
  tcp::socket far = acceptor.accept();
  return {std::move(near), std::move(far)};
}

}  // namespace switchyard::testing
