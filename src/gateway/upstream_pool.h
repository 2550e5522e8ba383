// UpstreamPool: one worker's idle keep-alive connections to replicas.
//
// Owned by a single worker thread; no locking. A connection idle for longer than `max_idle` is
// closed rather than reused, because engines close idle keep-alive connections themselves (vLLM's
// server after 5 s) and a request written into a connection the engine is closing fails.
// Buckets hold a shared_ptr to their replica so a pointer key can never be reused by another
// replica while connections to the old one are pooled.
#pragma once

#include <memory>
#include <unordered_map>
#include <vector>

#include "core/clock.h"
#include "fleet/replica_state.h"
#include "http/connection_stream.h"

namespace switchyard::gateway {

class UpstreamPool {
 public:
  UpstreamPool(TimeNs max_idle, size_t max_idle_per_replica)
      : max_idle_(max_idle), max_per_replica_(max_idle_per_replica) {}

  // Streams (plain TCP, or TLS to an https:// replica) are heap-held because Beast's streams
  // cannot be move-assigned; they are allocated per upstream connection, not per request.
  using Stream = std::unique_ptr<switchyard::http::ConnectionStream>;

  // A pooled connection to `replica` that has been idle less than max_idle, or null.
  Stream take(const fleet::ReplicaState* replica, TimeNs now);
  void give(const std::shared_ptr<fleet::ReplicaState>& replica, Stream stream, TimeNs now);
  // Closes connections idle too long and forgets replicas with nothing pooled.
  void sweep(TimeNs now);
  size_t idleCount() const;

 private:
  struct Idle {
    Stream stream;
    TimeNs since;
  };
  struct Bucket {
    std::shared_ptr<fleet::ReplicaState> replica;
    std::vector<Idle> idle;  // most recently returned last: reuse the warmest connection
  };
  TimeNs max_idle_;
  size_t max_per_replica_;
  std::unordered_map<const fleet::ReplicaState*, Bucket> buckets_;
};

}  // namespace switchyard::gateway
