// The exact prefix-cache index: which engine block hashes each replica holds, as its KV events
// say (kv_event_subscriber.h), published to the gateway workers as immutable snapshots.
//
// Writer: one thread (the subscriber) keeps a mutable ExactBlockSet per replica, and now and
// then builds an ExactIndexSnapshot (one frozen BlockTable per replica whose exact index is
// usable) and publishes it through the ExactIndexHub. Readers (workers, on the hot path) hold an
// ExactIndexCache: one atomic load of the hub's version per request, and only when it moved an
// atomic shared_ptr load of the new snapshot: no mutex, no allocation, no waiting on the writer.
// A replaced snapshot is freed by the writer (collectRetired) once no worker holds it, so a
// worker never frees one on the request path.
//
// Lookup cost: one open-addressing probe per block, stopping at the first miss
// (bench/micro/prefix_cache_bench.cc, "ExactIndex").
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace switchyard::fleet::kv_index {

// A frozen set of block hashes: an open-addressing table at most half full.
class BlockTable {
 public:
  explicit BlockTable(const std::unordered_set<uint64_t>& blocks);
  bool contains(uint64_t hash) const;
  // Leading blocks of `chain` present (the longest cached prefix, in blocks).
  uint32_t matchPrefix(std::span<const uint64_t> chain) const;
  size_t size() const { return count_; }

 private:
  std::vector<uint64_t> slots_;  // 0 = empty; hash 0 is has_zero_
  uint64_t mask_ = 0;
  size_t count_ = 0;
  bool has_zero_ = false;
};

// The replicas whose exact index is usable, keyed by their ReplicaState's address.
struct ExactIndexSnapshot {
  std::unordered_map<const void*, std::shared_ptr<const BlockTable>> replicas;
  const BlockTable* find(const void* replica) const {
    const auto it = replicas.find(replica);
    return it == replicas.end() ? nullptr : it->second.get();
  }
};

class ExactIndexHub {
 public:
  ExactIndexHub();
  // Writer thread.
  void publish(std::shared_ptr<const ExactIndexSnapshot> snapshot);
  // Writer thread, now and then: frees replaced snapshots that no reader holds any more.
  void collectRetired();
  // Any thread.
  uint64_t version() const { return version_.load(std::memory_order_acquire); }
  std::shared_ptr<const ExactIndexSnapshot> latest() const {
    return snapshot_.load(std::memory_order_acquire);
  }

 private:
  std::atomic<std::shared_ptr<const ExactIndexSnapshot>> snapshot_;
  std::atomic<uint64_t> version_{0};
  std::mutex retired_mutex_;  // writer side only (publish / collectRetired)
  std::vector<std::shared_ptr<const ExactIndexSnapshot>> retired_;
};

// A worker's view of the hub; not thread-safe (one per worker).
class ExactIndexCache {
 public:
  explicit ExactIndexCache(const ExactIndexHub* hub) : hub_(hub) {}
  // The latest snapshot, or nullptr when there is no hub or nothing was published yet.
  const ExactIndexSnapshot* get() {
    if (hub_ == nullptr) return nullptr;
    const uint64_t v = hub_->version();
    if (v != version_) {
      snapshot_ = hub_->latest();
      version_ = v;
    }
    return snapshot_.get();
  }

 private:
  const ExactIndexHub* hub_;
  std::shared_ptr<const ExactIndexSnapshot> snapshot_;
  uint64_t version_ = ~uint64_t{0};  // never a hub's: the first get() loads
};

}  // namespace switchyard::fleet::kv_index
