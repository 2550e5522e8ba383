#include "fleet/kv_index/prefix_index.h"

#include <algorithm>
#include <bit>
#include <unordered_set>

namespace switchyard::fleet::kv_index {
namespace {

uint64_t keyOf(uint64_t hash) { return hash == 0 ? 1 : hash; }

}  // namespace

bool ReplicaBlockSet::Table::contains(uint64_t key, uint64_t mask) const {
  // Block hashes are XXH3 outputs: their low bits are already well mixed.
  for (uint64_t i = key & mask;; i = (i + 1) & mask) {
    const uint64_t slot = slots[i];
    if (slot == key) return true;
    if (slot == 0) return false;
  }
}

bool ReplicaBlockSet::Table::add(uint64_t key, uint64_t mask) {
  for (uint64_t i = key & mask;; i = (i + 1) & mask) {
    uint64_t& slot = slots[i];
    if (slot == key) return false;
    if (slot == 0) {
      slot = key;
      ++count;
      return true;
    }
  }
}

void ReplicaBlockSet::Table::clear() {
  std::fill(slots.begin(), slots.end(), 0);
  count = 0;
}

ReplicaBlockSet::ReplicaBlockSet(uint32_t capacity_blocks)
    : capacity_(std::max<uint32_t>(capacity_blocks, 2)),
      generation_limit_(capacity_ / 2),
      // At most half full: short probe sequences.
      mask_(std::bit_ceil(static_cast<uint64_t>(generation_limit_) * 2) - 1) {
  current_.slots.assign(mask_ + 1, 0);
  previous_.slots.assign(mask_ + 1, 0);
}

bool ReplicaBlockSet::contains(uint64_t hash) const {
  const uint64_t key = keyOf(hash);
  return current_.contains(key, mask_) || previous_.contains(key, mask_);
}

uint32_t ReplicaBlockSet::matchPrefix(std::span<const uint64_t> chain) const {
  uint32_t n = 0;
  for (uint64_t hash : chain) {
    if (!contains(hash)) break;
    ++n;
  }
  return n;
}

void ReplicaBlockSet::rotate() {
  std::swap(current_, previous_);
  current_.clear();
}

void ReplicaBlockSet::insert(std::span<const uint64_t> chain) {
  // A chain longer than a generation keeps only its tail's worth: the engine could not hold
  // more either.
  for (uint64_t hash : chain) {
    const uint64_t key = keyOf(hash);
    if (current_.contains(key, mask_)) continue;
    if (current_.count >= generation_limit_) rotate();
    current_.add(key, mask_);
  }
}

uint32_t PrefixIndex::match(const void* replica, std::span<const uint64_t> chain) const {
  const auto it = sets_.find(replica);
  return it == sets_.end() ? 0 : it->second->matchPrefix(chain);
}

void PrefixIndex::insert(const void* replica, std::span<const uint64_t> chain,
                         uint32_t capacity_blocks) {
  std::unique_ptr<ReplicaBlockSet>& set = sets_[replica];
  if (!set || set->capacityBlocks() != std::max<uint32_t>(capacity_blocks, 2)) {
    set = std::make_unique<ReplicaBlockSet>(capacity_blocks);
  }
  set->insert(chain);
}

void PrefixIndex::insertKeepingBound(const void* replica, std::span<const uint64_t> chain,
                                     uint32_t capacity_blocks) {
  std::unique_ptr<ReplicaBlockSet>& set = sets_[replica];
  if (!set) set = std::make_unique<ReplicaBlockSet>(capacity_blocks);
  set->insert(chain);
}

uint32_t PrefixIndex::capacityOf(const void* replica) const {
  const auto it = sets_.find(replica);
  return it == sets_.end() ? 0 : it->second->capacityBlocks();
}

void PrefixIndex::retain(std::span<const void* const> live) {
  const std::unordered_set<const void*> keep(live.begin(), live.end());
  std::erase_if(sets_, [&](const auto& entry) { return !keep.contains(entry.first); });
}

}  // namespace switchyard::fleet::kv_index
