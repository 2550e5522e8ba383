#include "http/timed_socket.h"

namespace switchyard::http::detail {

void armDeadline(const boost::intrusive_ptr<SocketDeadline>& deadline,
                 SocketDeadline::Clock::time_point when) {
  SocketDeadline& state = *deadline;
  state.armed_for = when;
  const uint64_t generation = ++state.generation;
  state.timer.expires_at(when);  // cancels the earlier wait, whose handler sees the generation
  state.timer.async_wait([deadline, generation](const boost::system::error_code& ec) {
    SocketDeadline& s = *deadline;
    if (ec || generation != s.generation || s.socket == nullptr) return;
    s.armed_for = SocketDeadline::kNever;
    if (s.at == SocketDeadline::kNever) return;  // lifted: nothing to watch until the next one
    if (SocketDeadline::Clock::now() < s.at) {
      armDeadline(deadline, s.at);  // the deadline moved later since this wait began
      return;
    }
    if (s.pending > 0) {
      s.expire();
    } else {
      s.lapsed = true;
    }
  });
}

}  // namespace switchyard::http::detail
