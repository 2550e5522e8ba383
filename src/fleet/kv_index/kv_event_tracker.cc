#include "fleet/kv_index/kv_event_tracker.h"

namespace switchyard::fleet::kv_index {

ReplicaKvTracker::ReplicaKvTracker(uint32_t block_tokens, TimeNs resync)
    : block_tokens_(block_tokens), resync_(resync) {}

bool ReplicaKvTracker::usable(TimeNs now) const {
  return received_ && compatible_ && now >= resync_until_;
}

void ReplicaKvTracker::lost(TimeNs now) {
  blocks_.clear();
  dirty_ = true;
  resync_until_ = now + resync_;
  stats_->blocks.store(0, std::memory_order_relaxed);
}

void ReplicaKvTracker::apply(int64_t seq, std::string_view payload) {
  next_seq_ = seq + 1;
  if (decodeKvEventBatch(payload, scratch_) != KvDecodeError::kNone) {
    stats_->decode_errors.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  received_ = true;
  for (const KvEvent& event : scratch_.events) {
    switch (event.type) {
      case KvEventType::kBlockStored:
        if (event.block_size != 0 && event.block_size != block_tokens_) compatible_ = false;
        blocks_.insert(event.block_hashes.begin(), event.block_hashes.end());
        break;
      case KvEventType::kBlockRemoved:
        for (const uint64_t h : event.block_hashes) blocks_.erase(h);
        break;
      case KvEventType::kAllBlocksCleared:
        blocks_.clear();
        break;
    }
  }
  dirty_ = dirty_ || !scratch_.events.empty();
  stats_->events.fetch_add(static_cast<int64_t>(scratch_.events.size()), std::memory_order_relaxed);
  stats_->batches.fetch_add(1, std::memory_order_relaxed);
  stats_->blocks.store(static_cast<int64_t>(blocks_.size()), std::memory_order_relaxed);
}

void ReplicaKvTracker::receive(int64_t seq, std::string_view payload, const ReplayFn& replay,
                               TimeNs now) {
  if (seq < 0) return;
  if (next_seq_ >= 0 && seq < next_seq_) {
    if (seq != 0) return;  // a duplicate (e.g. already replayed)
    // The engine restarted: its cache is empty and its sequence starts over.
    blocks_.clear();
    dirty_ = true;
    next_seq_ = 0;
  }
  std::vector<std::pair<int64_t, std::string>> missed;
  if (next_seq_ < 0) {
    // First batch: catch up on what the engine buffered before we joined, best effort.
    if (seq > 0 && replay && replay(0, missed)) {
      for (const auto& [s, p] : missed) {
        if (s >= seq) break;
        apply(s, p);
      }
    }
  } else if (seq > next_seq_) {
    stats_->gaps.fetch_add(1, std::memory_order_relaxed);
    const int64_t from = next_seq_;
    bool filled = false;
    if (replay && replay(from, missed)) {
      // Filled only when the replay covers every missed sequence number, in order.
      int64_t want = from;
      for (const auto& [s, p] : missed) {
        if (s < want) continue;
        if (s != want || s >= seq) break;
        ++want;
      }
      filled = want == seq;
      if (filled) {
        for (const auto& [s, p] : missed) {
          if (s >= from && s < seq) apply(s, p);
        }
      }
    }
    if (filled) {
      stats_->gaps_repaired.fetch_add(1, std::memory_order_relaxed);
    } else {
      stats_->replay_failures.fetch_add(1, std::memory_order_relaxed);
      lost(now);
    }
  }
  apply(seq, payload);
}

}  // namespace switchyard::fleet::kv_index
