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

#include <boost/asio/ip/tcp.hpp>
#include <cstdint>
#include <memory>

namespace switchyard::http {

struct PeerWatch {
  using OnGone = void (*)(void* context);

  bool armed = false;
  bool gone = false;         // the peer left during the current arming
  uint64_t generation = 0;   // handlers of earlier armings are ignored
  boost::asio::ip::tcp::socket* socket = nullptr;  // valid while armed
  OnGone on_gone = nullptr;
  void* context = nullptr;
};

class PeerWatchScope {
 public:
  // Arms `watch` on `socket`; `on_gone(context)` runs once if the peer leaves before the scope
  // ends (context must stay valid that long).
  PeerWatchScope(const std::shared_ptr<PeerWatch>& watch, boost::asio::ip::tcp::socket& socket,
                 PeerWatch::OnGone on_gone, void* context);
  ~PeerWatchScope();
  PeerWatchScope(const PeerWatchScope&) = delete;
  PeerWatchScope& operator=(const PeerWatchScope&) = delete;

 private:
  PeerWatch& watch_;
  boost::asio::ip::tcp::socket& socket_;
};

}  // namespace switchyard::http
