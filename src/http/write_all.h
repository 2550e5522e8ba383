// writeAll: a whole gather write to a connection, optionally sending first what the socket takes
// at once.
//
// An awaited write that the socket takes whole still completes through the event loop: its
// completion is posted, and the loop polls the kernel (an epoll_wait that finds nothing) before
// it runs it. A request alone on its worker has nothing to interleave with in that pass, so
// writing at once saves a system call and a dispatch per write. With other requests in flight
// the pass is where their work interleaves and where the peer gets time to answer (writing at
// once there measured slower, docs/benchmarks.md), so callers ask for it only when alone, or
// for an event stream's pieces, whose client answers nothing.
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

// What the socket took of `buffers` right away (TimedSocket::writeNow), and what is left.
template <class ConstBuffers>
struct SentAtOnce {
  std::size_t sent;
  bool whole;  // every byte went (and there was one to send): nothing is left to await
  boost::beast::buffers_suffix<ConstBuffers> rest;
};

// Sends what the socket takes right away, without the event loop. The caller writes `rest` by
// awaiting (or with a handler) unless `whole`.
template <class ConstBuffers>
SentAtOnce<ConstBuffers> sendAtOnce(ConnectionStream& stream, const ConstBuffers& buffers) {
  const std::size_t sent = stream.writeNow(buffers);
  SentAtOnce<ConstBuffers> out{sent, sent == boost::asio::buffer_size(buffers) && sent > 0,
                               boost::beast::buffers_suffix<ConstBuffers>(buffers)};
  out.rest.consume(sent);
  return out;
}

// Writes all of `buffers`, what the socket takes right away without the event loop, and awaits
// only the rest. The result is what an awaited write's would be: (error, bytes).
template <class ConstBuffers>
boost::asio::awaitable<std::tuple<boost::system::error_code, std::size_t>> writeAllAtOnce(
    ConnectionStream& stream, const ConstBuffers& buffers) {
  SentAtOnce<ConstBuffers> at_once = sendAtOnce(stream, buffers);
  if (at_once.whole) co_return std::tuple{boost::system::error_code{}, at_once.sent};
  auto [ec, written] = co_await boost::asio::async_write(
      stream, at_once.rest, boost::asio::as_tuple(boost::asio::use_awaitable));
  co_return std::tuple{ec, at_once.sent + written};
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
