// PeerWatch: notices that the peer of a TCP connection has left (EOF or an error) while this
// side is busy elsewhere and not reading from it — e.g. a gateway waiting on the engine for a
// non-streamed answer, or an engine computing one. The owner then stops the work nobody will
// read.
//
// One PeerWatch per connection (one allocation per connection, none per request), held by
// shared_ptr because the pending wait's handler may run after the connection is gone. A
// PeerWatchScope arms it for one stretch of work and disarms it (cancelling the wait) when it
// ends; a handler that runs disarmed, or for an earlier arming, does nothing. Everything runs on
// the connection's executor thread. A peer that sends more data (a pipelined request) is not
// "gone": watching stops until the next arming.
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <cstdint>
#include <memory>
#include <vector>

namespace switchyard::http {

struct PeerWatch {
  using OnGone = void (*)(void* context);

  bool armed = false;
  bool gone = false;         // the peer left during the current arming
  bool waiting = false;      // a wait of the current arming is pending on the socket
  uint64_t generation = 0;   // handlers of earlier armings are ignored
  boost::asio::ip::tcp::socket* socket = nullptr;  // valid while armed
  OnGone on_gone = nullptr;
  void* context = nullptr;
};

// Starts the watches of one executor's connections only once their work has lasted `delay`.
// Each wait costs a system call (Asio re-arms the socket's edge-triggered epoll registration
// with epoll_ctl), a fifth of those of a request answered within milliseconds, while what the
// watch is for, stopping engine work nobody will read, matters only for requests that last.
// A peer that left before the wait starts is seen when it starts (the wait completes at once
// on a closed socket). One timer for all, ticking only while some arming is pending.
class PeerWatchArming {
 public:
  PeerWatchArming(const boost::asio::any_io_executor& executor, std::chrono::nanoseconds delay);
  PeerWatchArming(const PeerWatchArming&) = delete;
  PeerWatchArming& operator=(const PeerWatchArming&) = delete;

  // Starts `watch`'s wait once its work has lasted the delay (`lasted` so far), if the same
  // arming is still on by then: at once when it already has.
  void defer(const std::shared_ptr<PeerWatch>& watch, std::chrono::nanoseconds lasted);
  uint64_t waitsStarted() const { return waits_started_; }

 private:
  struct Pending {
    std::shared_ptr<PeerWatch> watch;
    uint64_t generation = 0;
    std::chrono::steady_clock::time_point due;
  };
  void start(const std::shared_ptr<PeerWatch>& watch);
  void tickAt(std::chrono::steady_clock::time_point due);
  void onTick();

  std::chrono::nanoseconds delay_;
  boost::asio::steady_timer timer_;
  std::chrono::steady_clock::time_point tick_at_;  // when the timer fires, if ticking_
  bool ticking_ = false;
  std::vector<Pending> pending_;
  uint64_t waits_started_ = 0;
};

// Where a PeerWatchScope's wait starts: after `arming`'s delay less what the work has `lasted`,
// or at once without an arming.
struct PeerWatchDeferral {
  PeerWatchArming* arming = nullptr;
  std::chrono::nanoseconds lasted{0};
};

class PeerWatchScope {
 public:
  // Arms `watch` on `socket`; `on_gone(context)` runs once if the peer leaves before the scope
  // ends (context must stay valid that long). The wait starts as `deferral` says.
  PeerWatchScope(const std::shared_ptr<PeerWatch>& watch, boost::asio::ip::tcp::socket& socket,
                 PeerWatch::OnGone on_gone, void* context, PeerWatchDeferral deferral = {});
  ~PeerWatchScope();
  PeerWatchScope(const PeerWatchScope&) = delete;
  PeerWatchScope& operator=(const PeerWatchScope&) = delete;

 private:
  PeerWatch& watch_;
  boost::asio::ip::tcp::socket& socket_;
};

}  // namespace switchyard::http
