// writeAll: a whole gather write to a connection, optionally sending first what the socket takes
// at once.
//
// An awaited write that the socket takes whole still completes through the event loop: its
// completion is posted, and the loop polls the kernel (an epoll_wait that finds nothing) before
// it runs it. A request alone on its worker has nothing to interleave with in that pass, so
// writing at once saves a system call and a dispatch per write. With other requests in flight
// the pass is where their work interleaves and where the peer gets time to answer (writing at
// once there measured slower, docs/benchmarks.md), so callers ask for it only when alone.
#pragma once

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/buffer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/buffers_suffix.hpp>
#include <cstddef>
#include <tuple>

#include "http/connection_stream.h"

namespace switchyard::http {

// Writes all of `buffers`, what the socket takes right away without the event loop, and awaits
// only the rest. The result is what an awaited write's would be: (error, bytes).
template <class ConstBuffers>
boost::asio::awaitable<std::tuple<boost::system::error_code, std::size_t>> writeAllAtOnce(
    ConnectionStream& stream, const ConstBuffers& buffers) {
  const std::size_t sent = stream.writeNow(buffers);
  const std::size_t total = boost::asio::buffer_size(buffers);
  if (sent == total && total > 0) co_return std::tuple{boost::system::error_code{}, total};
  boost::beast::buffers_suffix<ConstBuffers> rest(buffers);
  rest.consume(sent);
  auto [ec, written] = co_await boost::asio::async_write(
      stream, rest, boost::asio::as_tuple(boost::asio::use_awaitable));
  co_return std::tuple{ec, sent + written};
}

// Writes all of `buffers`: at once (above) when `at_once`, else an awaited write, without a
// coroutine frame of its own.
template <class ConstBuffers>
boost::asio::awaitable<std::tuple<boost::system::error_code, std::size_t>> writeAll(
    ConnectionStream& stream, const ConstBuffers& buffers, bool at_once) {
  if (at_once) return writeAllAtOnce(stream, buffers);
  return boost::asio::async_write(stream, buffers,
                                  boost::asio::as_tuple(boost::asio::use_awaitable));
}

}  // namespace switchyard::http
