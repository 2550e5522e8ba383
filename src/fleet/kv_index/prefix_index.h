// PrefixIndex: which prompt-block chains each replica has probably cached, learned from the
// gateway's routing (approximate prefix-cache routing; docs/routing.md): this worker's own, and
// the other workers' through the RoutedChainExchange (chain_exchange.h).
//
// A chain is inserted for the replica a request is routed to. Each replica's set is bounded by
// its KV cache in blocks (the engine can hold no more) and ages like an LRU, approximated by two
// generations: blocks are inserted into the current generation; when it holds half the bound,
// it becomes the previous one and the older previous generation is dropped. A lookup sees both;
// re-inserting a block of the previous generation refreshes it. So the set never exceeds the
// bound and a chain not used for about a bound's worth of insertions is forgotten, as the engine
// would evict it under KV pressure.
//
// One index per worker thread, no locks (what other workers routed arrives as messages). Tables are
// open-addressing arrays sized once per replica (the first time the replica is routed to, or when
// its bound changes); after that lookups and inserts allocate nothing. Cost: one probe per block
// looked up (a lookup stops at the first miss) or inserted.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <unordered_map>
#include <vector>

namespace switchyard::fleet::kv_index {

// One replica's probable cache: two generations of block hashes.
class ReplicaBlockSet {
 public:
  explicit ReplicaBlockSet(uint32_t capacity_blocks);

  uint32_t capacityBlocks() const { return capacity_; }
  // The number of leading blocks of `chain` found (the longest cached prefix, in blocks).
  uint32_t matchPrefix(std::span<const uint64_t> chain) const;
  bool contains(uint64_t hash) const;
  void insert(std::span<const uint64_t> chain);
  size_t size() const { return current_.count + previous_.count; }

 private:
  struct Table {
    std::vector<uint64_t> slots;  // 0 = empty (hash 0 is stored as 1)
    uint32_t count = 0;
    bool contains(uint64_t key, uint64_t mask) const;
    bool add(uint64_t key, uint64_t mask);  // false: already there
    void clear();
  };
  void rotate();

  uint32_t capacity_;
  uint32_t generation_limit_;  // blocks per generation
  uint64_t mask_;
  Table current_;
  Table previous_;
};

class PrefixIndex {
 public:
  // `replica` is an opaque key for one replica of one model (its ReplicaState's address).
  // Match length of `chain` on `replica`; 0 when nothing is known of it.
  uint32_t match(const void* replica, std::span<const uint64_t> chain) const;
  // Records that `replica` will cache `chain`; `capacity_blocks` bounds its set (a change
  // resizes the set and forgets it).
  void insert(const void* replica, std::span<const uint64_t> chain, uint32_t capacity_blocks);
  // As insert(), but a replica already known keeps its bound: what another worker routed (its
  // bound derived at another moment) never resizes and so forgets this worker's set.
  void insertKeepingBound(const void* replica, std::span<const uint64_t> chain,
                          uint32_t capacity_blocks);
  // The replica's bound; 0 when nothing is known of it.
  uint32_t capacityOf(const void* replica) const;
  // Forgets replicas not in `live` (called when the fleet snapshot changes, off the hot path).
  void retain(std::span<const void* const> live);
  size_t replicas() const { return sets_.size(); }

 private:
  std::unordered_map<const void*, std::unique_ptr<ReplicaBlockSet>> sets_;
};

}  // namespace switchyard::fleet::kv_index
