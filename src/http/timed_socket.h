// TimedSocket: a TCP socket whose operations are bounded by one deadline per connection.
//
// Beast's tcp_stream arms and cancels a timer around every read and write (a timer-queue insert
// and removal, a handler allocation, shared-pointer traffic): on a relayed stream that is two
// timers per event. Here the connection keeps one timer, armed for the earliest deadline it has
// been given and re-armed only when it fires before the current deadline; moving the deadline
// later, as every read and write of a stream does, costs a clock read and a compare.
//
// The semantics are Beast's: a deadline bounds the operations pending when it passes; they fail
// with beast::error::timeout and the socket is closed. A deadline that passes while nothing is
// pending fails the next operation, unless a new deadline is set first. expires_never() lifts
// it. A plain cancel() ends pending operations with operation_aborted.
//
// Models Asio's AsyncReadStream and AsyncWriteStream (Beast's ssl_stream runs over it). Owned by
// one coroutine on one executor, which one thread runs (no locking, and the reference count of
// the state shared with the timer and with pending operations' completions is not atomic); that
// state outlives the socket, so a completion that runs after it is gone is harmless.
#pragma once

#include <sys/socket.h>
#include <sys/uio.h>

#include <array>
#include <boost/asio/associator.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/buffer.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core/error.hpp>
#include <boost/smart_ptr/intrusive_ptr.hpp>
#include <boost/smart_ptr/intrusive_ref_counter.hpp>
#include <chrono>
#include <cstddef>
#include <utility>

namespace switchyard::http {

namespace detail {

struct SocketDeadline : boost::intrusive_ref_counter<SocketDeadline, boost::thread_unsafe_counter> {
  using Clock = std::chrono::steady_clock;
  static constexpr Clock::time_point kNever = Clock::time_point::max();

  explicit SocketDeadline(const boost::asio::any_io_executor& executor) : timer(executor) {}

  boost::asio::steady_timer timer;
  Clock::time_point at = kNever;                   // the current deadline
  Clock::time_point armed_for = kNever;            // when the timer fires (kNever: not armed)
  uint64_t generation = 0;                         // a re-armed timer's earlier wait is ignored
  boost::asio::ip::tcp::socket* socket = nullptr;  // null once the TimedSocket is gone
  int pending = 0;                                 // operations in flight
  bool expired = false;  // the deadline closed the socket: operations fail with timeout
  bool lapsed = false;   // the deadline passed while nothing was pending

  // Closes the socket for a passed deadline: what is pending fails with timeout.
  void expire() {
    expired = true;
    boost::system::error_code ignored;
    if (socket != nullptr) socket->close(ignored);
  }
};

void armDeadline(const boost::intrusive_ptr<SocketDeadline>& deadline,
                 SocketDeadline::Clock::time_point when);

// Completes one operation: counts it done and reports a deadline's closing as a timeout.
template <class Handler>
struct DeadlineCompletion {
  Handler handler;
  boost::intrusive_ptr<SocketDeadline> deadline;

  void operator()(boost::system::error_code ec, std::size_t transferred) {
    --deadline->pending;
    if (ec && deadline->expired) ec = boost::beast::error::timeout;
    std::move(handler)(ec, transferred);
  }
};

}  // namespace detail

class TimedSocket {
 public:
  using executor_type = boost::asio::ip::tcp::socket::executor_type;
  using lowest_layer_type = boost::asio::ip::tcp::socket::lowest_layer_type;  // for ssl::stream
  using Clock = detail::SocketDeadline::Clock;

  explicit TimedSocket(boost::asio::ip::tcp::socket socket)
      : socket_(std::move(socket)), deadline_(new detail::SocketDeadline(socket_.get_executor())) {
    deadline_->socket = &socket_;
  }
  ~TimedSocket() {
    deadline_->socket = nullptr;
    deadline_->timer.cancel();
  }
  TimedSocket(const TimedSocket&) = delete;
  TimedSocket& operator=(const TimedSocket&) = delete;

  executor_type get_executor() noexcept { return socket_.get_executor(); }
  boost::asio::ip::tcp::socket& socket() { return socket_; }
  lowest_layer_type& lowest_layer() { return socket_.lowest_layer(); }
  const lowest_layer_type& lowest_layer() const { return socket_.lowest_layer(); }

  template <typename Duration>
  void expires_after(Duration d) {
    detail::SocketDeadline& state = *deadline_;
    state.at = Clock::now() + std::chrono::duration_cast<Clock::duration>(d);
    state.lapsed = false;
    if (state.armed_for > state.at) detail::armDeadline(deadline_, state.at);
  }
  void expires_never() {
    deadline_->at = detail::SocketDeadline::kNever;
    deadline_->lapsed = false;
  }
  void cancel() {
    boost::system::error_code ignored;
    socket_.cancel(ignored);
  }

  // Sends what the socket takes right now, without waiting and without the event loop: the
  // bytes sent (0 when it would block, on an error, or once the deadline lapsed: the awaited
  // write of the rest meets the error and reports it). At most 8 buffers of the sequence.
  template <typename ConstBuffers>
  std::size_t writeNow(const ConstBuffers& buffers) {
    if (deadline_->lapsed || deadline_->expired) return 0;
    std::array<iovec, 8> iov;
    std::size_t count = 0;
    const auto end = boost::asio::buffer_sequence_end(buffers);
    for (auto it = boost::asio::buffer_sequence_begin(buffers); it != end; ++it) {
      if (count == iov.size()) break;
      const boost::asio::const_buffer buffer(*it);
      if (buffer.size() == 0) continue;
      iov[count++] = {const_cast<void*>(buffer.data()), buffer.size()};
    }
    if (count == 0) return 0;
    msghdr message{};
    message.msg_iov = iov.data();
    message.msg_iovlen = count;
    const ssize_t sent = ::sendmsg(socket_.native_handle(), &message, MSG_DONTWAIT | MSG_NOSIGNAL);
    return sent > 0 ? static_cast<std::size_t>(sent) : 0;
  }

  template <typename MutableBuffers, typename Token>
  auto async_read_some(const MutableBuffers& buffers, Token&& token) {
    return boost::asio::async_initiate<Token, void(boost::system::error_code, std::size_t)>(
        [this](auto handler, const MutableBuffers& b) {
          socket_.async_read_some(b, start(std::move(handler)));
        },
        token, buffers);
  }
  template <typename ConstBuffers, typename Token>
  auto async_write_some(const ConstBuffers& buffers, Token&& token) {
    return boost::asio::async_initiate<Token, void(boost::system::error_code, std::size_t)>(
        [this](auto handler, const ConstBuffers& b) {
          socket_.async_write_some(b, start(std::move(handler)));
        },
        token, buffers);
  }

 private:
  template <class Handler>
  detail::DeadlineCompletion<Handler> start(Handler handler) {
    if (deadline_->lapsed) deadline_->expire();  // the operation fails at once, as timed out
    ++deadline_->pending;
    return {std::move(handler), deadline_};
  }

  boost::asio::ip::tcp::socket socket_;
  boost::intrusive_ptr<detail::SocketDeadline> deadline_;
};

}  // namespace switchyard::http

// A completion keeps the wrapped handler's executor, allocator and cancellation slot.
template <template <typename, typename> class Associator, typename Handler,
          typename DefaultCandidate>
struct boost::asio::associator<Associator, switchyard::http::detail::DeadlineCompletion<Handler>,
                               DefaultCandidate> : Associator<Handler, DefaultCandidate> {
  static typename Associator<Handler, DefaultCandidate>::type get(
      const switchyard::http::detail::DeadlineCompletion<Handler>& completion,
      const DefaultCandidate& candidate = DefaultCandidate()) noexcept {
    return Associator<Handler, DefaultCandidate>::get(completion.handler, candidate);
  }
};
