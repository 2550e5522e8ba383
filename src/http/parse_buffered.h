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

#include <boost/asio/error.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/read_size.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/system/error_code.hpp>

namespace switchyard::http {

// With `head_only`, stops once the header is parsed (a parser not in eager mode parses no body
// byte in the call that completes the header).
template <class Parser>
boost::system::error_code parseBuffered(Parser& parser, boost::beast::flat_buffer& buffer,
                                        bool head_only = false) {
  namespace bh = boost::beast::http;
  while (!(head_only ? parser.is_header_done() : parser.is_done()) && buffer.size() > 0) {
    boost::system::error_code ec;
    const size_t used = parser.put(buffer.data(), ec);
    buffer.consume(used);
    if (ec) {
      // Compared only when set: a relayed stream parses a few elements per read, and each
      // comparison with an enumerator builds an error_code of its own.
      if (ec == bh::error::need_more || ec == bh::error::need_buffer) return {};
      return ec;
    }
    if (used == 0) return {};
  }
  return {};
}

// Reads without Beast's composed read (its operation state, work guard and executor copies on
// every read of a relayed stream): the caller reads on the stream itself into readRoom() (the
// room Beast's reads give: what is free, at least 512 bytes, at most 64 KiB), then parseRead()
// commits the bytes, turns the end of the stream into what Beast's reads report (the end of a
// message that ends when its connection does, or end_of_stream when nothing of a message came)
// and parses what is buffered, as parseBuffered() does.
inline boost::asio::mutable_buffer readRoom(boost::beast::flat_buffer& buffer) {
  return buffer.prepare(boost::beast::read_size(buffer, 65536));
}

template <class Parser>
boost::system::error_code parseRead(Parser& parser, boost::beast::flat_buffer& buffer,
                                    boost::system::error_code ec, size_t transferred,
                                    bool head_only = false) {
  buffer.commit(transferred);
  if (ec == boost::asio::error::eof) {
    if (!parser.got_some()) return boost::beast::http::error::end_of_stream;
    ec = {};
    parser.put_eof(ec);
  }
  if (ec) return ec;
  return parseBuffered(parser, buffer, head_only);
}

}  // namespace switchyard::http
