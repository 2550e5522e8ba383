// SharedView: the simulator's stand-in for the shared state several gateways keep in Redis
// (state/shared_state.h): each gateway's heartbeat and per-replica counts as of its last sync,
// in-flight admissions made atomically against a per-replica limit or leased ahead in slots, the
// model-wide rate limit across gateways, and session pins. While an outage lasts every call is
// degraded, as a Redis that does not answer within its deadline is. Pure; time comes in. Not
// thread-safe.
#pragma once

#include <cstdint>
#include <unordered_map>
#include <vector>

#include "core/clock.h"
#include "core/gcra.h"
#include "fleet/capacity_estimator.h"

namespace switchyard::sim {

struct ReplicaReport {
  int64_t running = 0;               // this gateway's requests in flight on the replica
  fleet::CapacityCounters counters;  // cumulative, as ReplicaCounters
};

// What one gateway reads back in a sync: the other live gateways' in-flight counts, the token
// counters summed over every gateway, and how many gateways are live.
struct SyncView {
  std::vector<int64_t> others_running;
  std::vector<fleet::CapacityCounters> global;
  int live_gateways = 1;
  int gateway_rank = 0;  // the reading gateway's position among the live ones (by index)
};

enum class SharedVerdict : uint8_t { kAdmitted, kInflightLimit, kRateLimited, kDegraded };

class SharedView {
 public:
  SharedView(int gateways, TimeNs liveness_ttl)
      : liveness_ttl_(liveness_ttl),
        reports_(static_cast<size_t>(gateways)),
        published_at_(static_cast<size_t>(gateways), -1),
        admitted_(static_cast<size_t>(gateways)),
        held_(static_cast<size_t>(gateways)) {}

  void setDown(bool down) { down_ = down; }
  bool down() const { return down_; }
  void resize(size_t replicas);

  // One sync of gateway `g`: its heartbeat and report land now.
  void publish(int g, const std::vector<ReplicaReport>& report, TimeNs now);
  // Gateway `g`'s read at `now`. `counted_on_path`: in-flight counts come from the admissions
  // (shared limits), not from the published reports (as in the live sync).
  void read(int g, TimeNs now, bool counted_on_path, SyncView& out) const;

  // Check-and-admit on `replica` for gateway `g`: below `limit` (0: no limit) across the live
  // gateways, and within the model-wide `rate` (requests/s, 0: none).
  SharedVerdict admit(int g, uint32_t replica, int64_t limit, double rate, double burst, TimeNs now,
                      TimeNs* retry_after);
  void release(int g, uint32_t replica);
  // Slot leases (admission/inflight_slots.h, as the live growSlots / changeSlots): up to `want`
  // more slots of `replica` for gateway `g`, as many as fit under `limit` with every live
  // gateway's leases and admissions counted. Returns the slots granted (0: at the limit), or -1
  // while shared state is down.
  int64_t growSlots(int g, uint32_t replica, int64_t limit, int64_t want, TimeNs now);
  // Gateway `g` gives back (`delta` < 0) or re-adds slots of its lease.
  void changeSlots(int g, uint32_t replica, int64_t delta);
  int64_t leased(int g, uint32_t replica) const {
    return held_[static_cast<size_t>(g)][replica];
  }
  // A gateway died: its heartbeat stops; its admissions are dropped with it.
  void forget(int g);

  // Session pins (replica index, -1: not pinned).
  int pinned(uint64_t session) const;
  void pin(uint64_t session, int replica) { pins_[session] = replica; }

 private:
  bool live(size_t g, TimeNs now) const {
    return published_at_[g] >= 0 && now - published_at_[g] <= liveness_ttl_;
  }

  // Admissions and leased slots on `replica` of `g` and of the other live gateways.
  int64_t inflightCounted(int g, uint32_t replica, TimeNs now) const;

  TimeNs liveness_ttl_;
  bool down_ = false;
  std::vector<std::vector<ReplicaReport>> reports_;  // [gateway][replica]
  std::vector<fleet::CapacityCounters> global_;      // [replica]: reports_' counters summed
  std::vector<TimeNs> published_at_;                 // heartbeats; -1: never
  std::vector<std::vector<int32_t>> admitted_;       // [gateway][replica]
  std::vector<std::vector<int32_t>> held_;           // leased slots, [gateway][replica]
  AtomicGcra rate_;
  double rate_configured_ = -1;
  std::unordered_map<uint64_t, int> pins_;
};

}  // namespace switchyard::sim
