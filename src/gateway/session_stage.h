// The session-affinity stage of the request path (docs/configuration.md, "Sessions"): before
// routing, the replica a request's session is pinned to (this worker's short-lived cache in
// front of shared state); after routing, the pin of a new or moved session, set atomically
// across gateways (when another gateway pinned it first, its choice wins).
//
// One per worker, used from its thread only. A cache hit costs no round trip.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <string>
#include <string_view>

#include "gateway/session_cache.h"
#include "gateway/shared_state_config.h"
#include "gateway/shared_state_notice.h"
#include "state/shared_state.h"

namespace switchyard::gateway {

class SessionStage {
 public:
  SessionStage(const SessionAffinityConfig& config, state::SharedStateClient& shared,
               SharedStateNotice& notice);

  // The header that names a request's session ("" when affinity is off).
  std::string_view header() const { return config_.enabled ? config_.header : std::string_view(); }

  // `pin` receives the replica the session is pinned to ("" when none).
  boost::asio::awaitable<void> findPin(std::string_view model, std::string_view session,
                                       TimeNs now, std::string& pin);
  // Pins the session to `chosen`, expecting it unpinned or still pinned to `pin`; `pin`
  // receives the pin in force afterwards (another gateway's choice if it won the race; `chosen`
  // when shared state does not answer).
  boost::asio::awaitable<void> pinTo(std::string_view model, std::string_view session,
                                     std::string_view chosen, TimeNs now, std::string& pin);

 private:
  const SessionAffinityConfig& config_;
  state::SharedStateClient& shared_;
  SharedStateNotice& notice_;
  SessionCache cache_;
};

}  // namespace switchyard::gateway
