// ConnectionStream: one HTTP connection's byte stream, plain TCP or TLS over it, behind one
// type, so the request path (Beast's parsers, Asio's composed writes, timeouts, the peer watch)
// is written once for both.
//
// It models Asio's AsyncReadStream and AsyncWriteStream; timeouts are one deadline per
// connection (http/timed_socket.h), which also bounds the TLS handshake. TLS goes through
// Beast's ssl_stream, whose flat_stream layer coalesces a gather write (a response head, a chunk
// prefix, a piece, CRLF) into one TLS record instead of one record per buffer. A TLS stream
// holds its ssl::context, so a certificate reload that publishes a new context leaves the
// connections made with the old one untouched.
//
// Owned by one coroutine on one executor (no locking). Including this header brings in Beast
// and Asio's SSL support: keep it to the request path's few translation units.
#pragma once

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/beast/ssl/ssl_stream.hpp>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "http/timed_socket.h"

namespace switchyard::http {

class ConnectionStream {
 public:
  using TlsStream = boost::beast::ssl_stream<TimedSocket>;
  using executor_type = TimedSocket::executor_type;

  // Plain TCP over an accepted or connected socket.
  explicit ConnectionStream(boost::asio::ip::tcp::socket socket)
      : plain_(std::in_place, std::move(socket)) {}
  // TLS over `socket` when `context` is set (the handshake is the caller's next step), else
  // plain TCP.
  ConnectionStream(boost::asio::ip::tcp::socket socket,
                   std::shared_ptr<boost::asio::ssl::context> context)
      : context_(std::move(context)) {
    if (context_) {
      tls_.emplace(std::move(socket), *context_);
    } else {
      plain_.emplace(std::move(socket));
    }
  }

  ConnectionStream(const ConnectionStream&) = delete;
  ConnectionStream& operator=(const ConnectionStream&) = delete;

  executor_type get_executor() noexcept { return tcp().get_executor(); }
  TimedSocket& tcp() { return tls_ ? tls_->next_layer() : *plain_; }
  boost::asio::ip::tcp::socket& socket() { return tcp().socket(); }
  template <typename Duration>
  void expires_after(Duration d) {
    tcp().expires_after(d);
  }
  void expires_never() { tcp().expires_never(); }
  void cancel() { tcp().cancel(); }

  // Sends what the socket takes right now (TimedSocket::writeNow); over TLS nothing (0).
  template <typename ConstBuffers>
  std::size_t writeNow(const ConstBuffers& buffers) {
    return plain_ ? plain_->writeNow(buffers) : 0;
  }

  bool isTls() const { return tls_.has_value(); }
  TlsStream* tls() { return tls_ ? &*tls_ : nullptr; }

  template <typename MutableBuffers, typename Token>
  auto async_read_some(const MutableBuffers& buffers, Token&& token) {
    if (tls_) return tls_->async_read_some(buffers, std::forward<Token>(token));
    return plain_->async_read_some(buffers, std::forward<Token>(token));
  }
  template <typename ConstBuffers, typename Token>
  auto async_write_some(const ConstBuffers& buffers, Token&& token) {
    if (tls_) return tls_->async_write_some(buffers, std::forward<Token>(token));
    return plain_->async_write_some(buffers, std::forward<Token>(token));
  }

 private:
  std::shared_ptr<boost::asio::ssl::context> context_;  // outlives tls_ (declared first)
  std::optional<TimedSocket> plain_;
  std::optional<TlsStream> tls_;
};

}  // namespace switchyard::http
