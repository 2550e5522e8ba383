// ReplicaKvTracker: one replica's exact index of engine block hashes, kept from its KV events,
// and the sequence bookkeeping that finds lost batches. No I/O: the subscriber
// (kv_event_subscriber.h) hands it each received batch and a way to ask the engine's replay
// endpoint for missed ones, so the logic is tested without sockets.
//
// Sequence numbers: each PUB batch carries one, counting up by 1 from 0. A batch further ahead
// than the next expected one reveals a gap: the missed range is requested from the replay
// endpoint and applied in order; when the replay cannot fill it (no endpoint, timeout, the
// engine's buffer no longer holds it) the index is cleared and the replica falls back to the
// approximate index until fresh events have arrived for `resync` (its cache has turned over
// enough for the exact index to say something again). A batch behind the expected one is a
// duplicate (ignored), except sequence 0: the engine restarted, with an empty cache.
//
// Thread: the subscriber's thread only; stats() is read by any thread (atomics).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_set>
#include <utility>
#include <vector>

#include "core/clock.h"
#include "fleet/kv_index/kv_event_decoder.h"

namespace switchyard::fleet::kv_index {

// Counters of one replica's subscription (/metrics, docs/metrics.md).
struct KvEventStats {
  std::atomic<int64_t> events{0};           // events applied
  std::atomic<int64_t> batches{0};          // batches applied (live and replayed)
  std::atomic<int64_t> gaps{0};             // gaps detected by sequence number
  std::atomic<int64_t> gaps_repaired{0};    // ... filled by replay
  std::atomic<int64_t> replay_failures{0};  // ... that replay could not fill (index cleared)
  std::atomic<int64_t> decode_errors{0};    // batches that were not a valid EventBatch
  std::atomic<int64_t> blocks{0};           // blocks in the exact index now
  std::atomic<bool> exact{false};           // the exact index is used for routing now
};

// The replay endpoint, as a function: fills `out` with the buffered batches from `from` on
// (sequence, payload), in order; false when it could not be reached or did not answer in time.
using ReplayFn =
    std::function<bool(int64_t from, std::vector<std::pair<int64_t, std::string>>& out)>;

class ReplicaKvTracker {
 public:
  // `block_tokens`: the gateway's block size; BlockStored events of another block size make the
  // replica incompatible (its hashes cannot match the gateway's), so it is never used exactly.
  ReplicaKvTracker(uint32_t block_tokens, TimeNs resync);

  // One received batch. `replay` may be empty (no replay endpoint).
  void receive(int64_t seq, std::string_view payload, const ReplayFn& replay, TimeNs now);

  // Whether routing may use the exact index now (events received, compatible, not resyncing).
  bool usable(TimeNs now) const;
  bool compatible() const { return compatible_; }
  const std::unordered_set<uint64_t>& blocks() const { return blocks_; }
  // Set when the index changed since the last takeDirty().
  bool takeDirty() { return std::exchange(dirty_, false); }
  bool dirtyPending() const { return dirty_; }
  int64_t nextSeq() const { return next_seq_; }
  const KvEventStats& stats() const { return *stats_; }
  // What routing uses now (the subscriber decides, with the target's compatibility).
  void setExact(bool exact) { stats_->exact.store(exact, std::memory_order_relaxed); }
  // Shared, so that metrics can outlive the tracker.
  std::shared_ptr<KvEventStats> sharedStats() const { return stats_; }

 private:
  void apply(int64_t seq, std::string_view payload);
  void lost(TimeNs now);

  uint32_t block_tokens_;
  TimeNs resync_;
  std::unordered_set<uint64_t> blocks_;
  int64_t next_seq_ = -1;  // -1: nothing received yet
  bool received_ = false;
  bool compatible_ = true;
  TimeNs resync_until_ = 0;  // after an unfilled gap: approximate until then
  bool dirty_ = false;
  KvEventBatch scratch_;
  std::shared_ptr<KvEventStats> stats_ = std::make_shared<KvEventStats>();
};

}  // namespace switchyard::fleet::kv_index
