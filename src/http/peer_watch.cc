#include "http/peer_watch.h"

#include <sys/socket.h>

#include <cerrno>

namespace switchyard::http {
namespace {

void awaitPeerEvent(const std::shared_ptr<PeerWatch>& watch) {
  watch->socket->async_wait(
      boost::asio::ip::tcp::socket::wait_read,
      [watch, generation = watch->generation](const boost::system::error_code& ec) {
        if (ec || !watch->armed || watch->generation != generation) return;
        char byte;
        const ssize_t n =
            ::recv(watch->socket->native_handle(), &byte, 1, MSG_PEEK | MSG_DONTWAIT);
        if (n > 0) return;  // data to read (a pipelined request): nothing to tell
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
          awaitPeerEvent(watch);  // woken without an event: keep watching
          return;
        }
        watch->gone = true;  // EOF or an error: the peer has left
        if (watch->on_gone != nullptr) watch->on_gone(watch->context);
      });
}

}  // namespace

PeerWatchScope::PeerWatchScope(const std::shared_ptr<PeerWatch>& watch,
                               boost::asio::ip::tcp::socket& socket, PeerWatch::OnGone on_gone,
                               void* context)
    : watch_(*watch), socket_(socket) {
  watch_.armed = true;
  watch_.gone = false;
  ++watch_.generation;
  watch_.socket = &socket;
  watch_.on_gone = on_gone;
  watch_.context = context;
  awaitPeerEvent(watch);
}

PeerWatchScope::~PeerWatchScope() {
  watch_.armed = false;
  watch_.on_gone = nullptr;
  watch_.context = nullptr;
  boost::system::error_code ignored;
  socket_.cancel(ignored);  // ends the pending wait; its handler finds the watch disarmed
}

}  // namespace switchyard::http
