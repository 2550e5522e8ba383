// PrefixProbe: what prefix-cache routing knows about one request, handed to the router by the
// gateway worker: the request's prompt as a chain of block hashes, and a way to ask how many of
// its leading blocks a replica has cached (the engines' exact index or the worker's approximate
// one, fleet/kv_index/).
//
// Built per request by the worker that owns the index; read on the same thread during route().
// match() must not allocate or block.
#pragma once

#include <cstdint>

#include <string_view>

#include "fleet/fleet_snapshot.h"

namespace switchyard::routing {

// A replica's match, and whether it came from the exact index (the replica's own KV events) or
// the approximate one (this worker's routing history).
struct PrefixMatch {
  uint32_t blocks = 0;
  bool exact = false;
};

class PrefixProbe {
 public:
  // Leading blocks of the request's chain cached on `replica` (0..total_blocks), and where
  // that came from.
  virtual PrefixMatch match(const fleet::ReplicaState& replica) const = 0;
  // How many homes `replica` of `model` takes in proportion to the others (its KV cache: the
  // prefixes it can hold); any positive scale. Alike in every gateway for the same replica.
  virtual double homeWeight(std::string_view model, const fleet::ReplicaEntry& replica) const {
    (void)model;
    (void)replica;
    return 1;
  }

  uint32_t total_blocks = 0;   // full blocks in the request's prompt
  uint32_t block_tokens = 16;  // tokens per block
  // Hot-spot guard: a candidate holding more than this × its capacity-weighted fair share of the
  // requests in flight has its match ignored (<= 0: no guard). strategies/prefix_cache.h.
  double hot_spot_factor = 1.5;
  // ... plus one request in flight per this many matched tokens beyond the first as many (<= 0:
  // none): a long match saves its prefill on the holder, and rebuilding it elsewhere evicts as
  // much of other prefixes there. Shorter matches are guarded as if there were no allowance.
  // Load-balance prices a queue at a KV-critical exact holder the same way (load_balance.cc).
  double hot_spot_tokens = 1536;
  // Consistent placement of a prefix no candidate is known to hold (strategies/prefix_cache.h):
  // the chain's hash after its first home_blocks blocks (the whole chain when shorter) ranks the
  // replicas as its homes, alike in every gateway and worker. home_blocks 0: off.
  uint32_t home_blocks = 0;
  uint64_t home_anchor = 0;

 protected:
  ~PrefixProbe() = default;
};

}  // namespace switchyard::routing
