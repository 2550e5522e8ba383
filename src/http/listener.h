// Listening sockets for the per-worker accept model: every worker binds its own acceptor to the
// same address with SO_REUSEPORT, so the kernel spreads connections across workers and no
// accept lock is shared between threads.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <string>

namespace switchyard::http {

// Resolves "host:port" (numeric address, "localhost" or a name) to an endpoint. Throws
// std::runtime_error at start-up when it cannot.
boost::asio::ip::tcp::endpoint resolveListenAddress(const std::string& address);

// Opens, binds and listens; `reuse_port` sets SO_REUSEPORT. Throws boost::system::system_error.
boost::asio::ip::tcp::acceptor openAcceptor(boost::asio::io_context& io,
                                            const boost::asio::ip::tcp::endpoint& endpoint,
                                            bool reuse_port);

}  // namespace switchyard::http
