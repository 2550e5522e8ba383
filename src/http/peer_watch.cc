#include "http/peer_watch.h"

#include <sys/socket.h>

#include <algorithm>
#include <cerrno>

namespace switchyard::http {
namespace {

void awaitPeerEvent(const std::shared_ptr<PeerWatch>& watch) {
  watch->waiting = true;
  watch->socket->async_wait(
      boost::asio::ip::tcp::socket::wait_read,
      [watch, generation = watch->generation](const boost::system::error_code& ec) {
        if (watch->generation != generation) return;
        watch->waiting = false;
        if (ec || !watch->armed) return;
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

PeerWatchArming::PeerWatchArming(const boost::asio::any_io_executor& executor,
                                 std::chrono::nanoseconds delay)
    : delay_(delay), timer_(executor) {}

void PeerWatchArming::defer(const std::shared_ptr<PeerWatch>& watch,
                            std::chrono::nanoseconds lasted) {
  if (lasted >= delay_) {
    start(watch);
    return;
  }
  const auto due = std::chrono::steady_clock::now() + (delay_ - lasted);
  pending_.push_back({watch, watch->generation, due});
  // A quarter of the delay late, so that one tick starts every wait due in that window.
  if (!ticking_ || due + delay_ / 4 < tick_at_) tickAt(due + delay_ / 4);
}

void PeerWatchArming::start(const std::shared_ptr<PeerWatch>& watch) {
  awaitPeerEvent(watch);
  ++waits_started_;
}

void PeerWatchArming::tickAt(std::chrono::steady_clock::time_point at) {
  ticking_ = true;
  tick_at_ = at;
  timer_.expires_at(at);  // a pending wait completes as cancelled; the new one replaces it
  timer_.async_wait([this](const boost::system::error_code& ec) {
    if (!ec) onTick();
  });
}

void PeerWatchArming::onTick() {
  ticking_ = false;
  const auto now = std::chrono::steady_clock::now();
  auto next = std::chrono::steady_clock::time_point::max();
  size_t kept = 0;
  for (Pending& entry : pending_) {
    PeerWatch& watch = *entry.watch;
    // An arming that ended (or was followed by another) before its wait began is dropped.
    if (!watch.armed || watch.generation != entry.generation || watch.waiting || watch.gone) {
      continue;
    }
    if (entry.due <= now) {
      start(entry.watch);
      continue;
    }
    next = std::min(next, entry.due);
    if (&pending_[kept] != &entry) pending_[kept] = std::move(entry);
    ++kept;
  }
  pending_.resize(kept);
  if (kept > 0) tickAt(next + delay_ / 4);
}

PeerWatchScope::PeerWatchScope(const std::shared_ptr<PeerWatch>& watch,
                               boost::asio::ip::tcp::socket& socket, PeerWatch::OnGone on_gone,
                               void* context, PeerWatchDeferral deferral)
    : watch_(*watch), socket_(socket) {
  watch_.armed = true;
  watch_.gone = false;
  watch_.waiting = false;
  ++watch_.generation;
  watch_.socket = &socket;
  watch_.on_gone = on_gone;
  watch_.context = context;
  if (deferral.arming != nullptr) {
    deferral.arming->defer(watch, deferral.lasted);
  } else {
    awaitPeerEvent(watch);
  }
}

PeerWatchScope::~PeerWatchScope() {
  watch_.armed = false;
  watch_.on_gone = nullptr;
  watch_.context = nullptr;
  if (watch_.waiting) {
    watch_.waiting = false;
    boost::system::error_code ignored;
    socket_.cancel(ignored);  // ends the pending wait; its handler finds the watch disarmed
  }
}

}  // namespace switchyard::http
