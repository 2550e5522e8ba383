// parseBuffered: feeds a Beast parser what a buffer already holds, without I/O, and stops where
// more input is needed (or, for a buffer_body, where its room is full).
//
// Why not Beast's async read: when the data is already buffered (a request's body that came
// with its header, an answer's body with its head), Beast completes the read through a post,
// and Asio runs its reactor between handlers: an epoll_wait per post, for nothing. It also
// parses every element buffered where Beast's read_some stops after each chunk, so events that
// arrived together leave together, and it stops where the input does: the parser's eager mode
// would read on for a chunk header cut in two and hold back an event already parsed.
#pragma once

#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/system/error_code.hpp>

namespace switchyard::http {

template <class Parser>
boost::system::error_code parseBuffered(Parser& parser, boost::beast::flat_buffer& buffer) {
  namespace bh = boost::beast::http;
  while (!parser.is_done() && buffer.size() > 0) {
    boost::system::error_code ec;
    const size_t used = parser.put(buffer.data(), ec);
    buffer.consume(used);
    if (ec == bh::error::need_more || ec == bh::error::need_buffer) return {};
    if (ec) return ec;
    if (used == 0) return {};
  }
  return {};
}

}  // namespace switchyard::http
