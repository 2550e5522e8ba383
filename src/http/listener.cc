#include "http/listener.h"

#include <sys/socket.h>

#include <boost/asio/detail/socket_option.hpp>
#include <stdexcept>

#include "fleet/fleet_registry.h"

namespace switchyard::http {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;

tcp::endpoint resolveListenAddress(const std::string& address) {
  std::string host;
  uint16_t port = 0;
  if (!fleet::splitHostPort(address, host, port)) {
    throw std::runtime_error("not host:port: " + address);
  }
  boost::system::error_code ec;
  auto ip = asio::ip::make_address(host, ec);
  if (!ec) return {ip, port};
  asio::io_context io;
  tcp::resolver resolver(io);
  auto results = resolver.resolve(host, std::to_string(port), ec);
  if (ec || results.empty()) throw std::runtime_error("cannot resolve " + address);
  return results.begin()->endpoint();
}

tcp::acceptor openAcceptor(asio::io_context& io, const tcp::endpoint& endpoint, bool reuse_port) {
  tcp::acceptor acceptor(io);
  acceptor.open(endpoint.protocol());
  acceptor.set_option(asio::socket_base::reuse_address(true));
  if (reuse_port) {
    using ReusePort = asio::detail::socket_option::boolean<SOL_SOCKET, SO_REUSEPORT>;
    acceptor.set_option(ReusePort(true));
  }
  acceptor.bind(endpoint);
  acceptor.listen(asio::socket_base::max_listen_connections);
  return acceptor;
}

}  // namespace switchyard::http
