// In-flight admission on one replica: the check-and-admit every request makes after routing,
// and this gateway's share of a replica's limit when the count shared with other gateways
// cannot be read.
//
// Pure apart from the replica's relaxed atomics: no clock, no I/O. The live request path and
// the fleet simulator call the same functions.
#pragma once

#include <cstdint>

#include "fleet/replica_state.h"

namespace switchyard::admission {

// Counts the request on the replica (this gateway's `running`) and says whether it fits under
// `limit` (0: unlimited) together with the other gateways' count as last read. The routing
// filter saw the replica under its limit, but another worker may have admitted a request since:
// the increment is the admission, and a request that overshot is undone here. On true the
// caller owns one count and gives it back with releaseLocally().
inline bool admitLocally(fleet::ReplicaState& replica, int64_t limit) {
  fleet::ReplicaCounters& counters = replica.counters();
  const int64_t before = counters.running.fetch_add(1, std::memory_order_relaxed);
  if (limit > 0 && before + replica.remoteRunning() >= limit) {
    counters.running.fetch_sub(1, std::memory_order_relaxed);
    return false;
  }
  return true;
}

inline void releaseLocally(fleet::ReplicaState& replica) {
  replica.counters().running.fetch_sub(1, std::memory_order_relaxed);
}

// This gateway's share of a replica's in-flight limit while the shared count is unreachable:
// the limit split over the live gateways so that the shares of one replica add up to exactly
// `limit`. The remainder (limit mod gateways) goes to different gateways on different replicas
// (by `replica_key`, the same on every gateway), so no gateway is starved everywhere. `rank` is
// this gateway's position among the live gateways (0-based, the same order on every gateway).
inline int64_t inflightShare(int64_t limit, int live_gateways, int rank, uint64_t replica_key) {
  if (limit <= 0) return 0;
  if (live_gateways <= 1) return limit;
  const auto gateways = static_cast<uint64_t>(live_gateways);
  const auto base = static_cast<uint64_t>(limit) / gateways;
  const uint64_t extra = static_cast<uint64_t>(limit) % gateways;
  const uint64_t slot = (replica_key + static_cast<uint64_t>(rank < 0 ? 0 : rank)) % gateways;
  return static_cast<int64_t>(base + (slot < extra ? 1 : 0));
}

// Whether this gateway's count on the replica, the caller's admitted request included, is
// within its share: with shares adding up to the limit, gateways deciding alone stay under it.
inline bool withinShare(const fleet::ReplicaState& replica, int64_t limit, int live_gateways,
                        int rank) {
  if (limit <= 0) return true;
  const int64_t share = inflightShare(limit, live_gateways, rank, replica.nameHash());
  return replica.counters().running.load(std::memory_order_relaxed) <= share;
}

}  // namespace switchyard::admission
