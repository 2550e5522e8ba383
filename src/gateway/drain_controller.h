// DrainController: an operator's drain of one replica, the same on every gateway.
//
// `POST /admin/drain {"replica": NAME}` (or {"pod": NAME}, NAME being the replica's address,
// its Pod's name or namespace/name; {"drain": false} undoes it) stops new traffic to the replica
// at once on this gateway and, through shared state (a mark per replica address, valid for
// `mark_ttl`), on every other gateway within one sync interval. `GET /admin/drain/<NAME>`
// reports what is still in flight on it across gateways, and whether it is empty: draining,
// nothing in flight, and draining long enough (`settle`) that every gateway has seen the drain
// and published its counts since. `GET /admin/drain` lists the replicas draining for any reason
// (operator, Pod deletion, the aibrix.ai/draining label).
//
// A mark names the Pod it was set for, so an address that a new Pod reuses later is not drained
// by it. Requests in flight are never cut: a drained replica only takes no new requests (routing
// excludes it as "draining"; a session pinned to it re-pins on its next request; async jobs on
// it stay reachable). Control thread only.
#pragma once

#include <boost/asio/io_context.hpp>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "fleet/fleet_registry.h"
#include "gateway/admin_server.h"
#include "gateway/periodic_cycle.h"
#include "state/shared_state.h"

namespace switchyard::gateway {

struct DrainSettings {
  TimeNs mark_ttl = 24 * 3600 * kNsPerSec;
  TimeNs sync_interval = 500 * kNsPerMs;  // read the shared marks this often
  TimeNs settle = 0;  // see above; the gateway sets 2 × the shared-state sync interval
};

class DrainController {
 public:
  DrainController(boost::asio::io_context& io, const fleet::FleetRegistry& registry,
                  state::SharedStateSync& sync, DrainSettings settings);
  ~DrainController();
  void start();
  void stop();

  // After every fleet change: applies the marks to the replicas of the new snapshot.
  void refresh();

  // Admin endpoints: POST /admin/drain, GET /admin/drain, GET /admin/drain/<NAME>.
  AdminResponse handle(const AdminRequest& request);

  // A replica's drain status as JSON (the body of GET /admin/drain/<NAME>).
  std::string statusJson(const fleet::ModelEntry& model, const fleet::ReplicaEntry& replica,
                         TimeNs now) const;
  // When the replica started draining (any reason), -1 if it is not draining.
  TimeNs drainingSince(const fleet::ReplicaState* replica) const;
  // Every mark in force (address -> Pod name, "" for a static replica), for tests and views.
  std::map<std::string, std::string> marks() const;

  // Sets (or clears) the operator's drain of `address` (Pod `pod`, "" if static) here and in
  // shared state.
  void setDrain(const std::string& address, const std::string& pod, bool drain);

 private:
  struct LocalMark {
    std::string pod;
    bool drain = true;     // false: an undo not yet written to shared state
    bool written = false;  // shared state has it
  };
  boost::asio::awaitable<void> cycle();
  bool wanted(const fleet::ReplicaEntry& replica) const;

  const fleet::FleetRegistry& registry_;
  state::SharedStateSync& sync_;
  DrainSettings settings_;
  std::shared_ptr<bool> alive_;
  std::map<std::string, std::string> shared_;   // address -> pod, as last read
  std::map<std::string, LocalMark> local_;      // this gateway's changes not yet read back
  std::map<const fleet::ReplicaState*, TimeNs> since_;
  PeriodicCycle cycle_;  // last: stopped and destroyed first
};

}  // namespace switchyard::gateway
