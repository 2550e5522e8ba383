#include "fleet/kv_index/exact_index.h"

#include <algorithm>
#include <bit>

namespace switchyard::fleet::kv_index {
namespace {

// Spreads the bits of an engine hash before masking: vLLM's hashes are already uniform, but a
// test's or an engine's small integers would otherwise cluster.
uint64_t mix(uint64_t h) {
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdull;
  h ^= h >> 33;
  return h;
}

}  // namespace

BlockTable::BlockTable(const std::unordered_set<uint64_t>& blocks) {
  const size_t capacity = std::bit_ceil(std::max<size_t>(16, blocks.size() * 2));
  slots_.assign(capacity, 0);
  mask_ = capacity - 1;
  for (const uint64_t h : blocks) {
    if (h == 0) {
      has_zero_ = true;
      ++count_;
      continue;
    }
    for (uint64_t i = mix(h) & mask_;; i = (i + 1) & mask_) {
      if (slots_[i] == 0) {
        slots_[i] = h;
        ++count_;
        break;
      }
      if (slots_[i] == h) break;
    }
  }
}

bool BlockTable::contains(uint64_t hash) const {
  if (hash == 0) return has_zero_;
  for (uint64_t i = mix(hash) & mask_;; i = (i + 1) & mask_) {
    const uint64_t slot = slots_[i];
    if (slot == hash) return true;
    if (slot == 0) return false;
  }
}

uint32_t BlockTable::matchPrefix(std::span<const uint64_t> chain) const {
  uint32_t n = 0;
  for (const uint64_t h : chain) {
    if (!contains(h)) break;
    ++n;
  }
  return n;
}

ExactIndexHub::ExactIndexHub() : snapshot_(std::make_shared<const ExactIndexSnapshot>()) {}

void ExactIndexHub::publish(std::shared_ptr<const ExactIndexSnapshot> snapshot) {
  std::shared_ptr<const ExactIndexSnapshot> old =
      snapshot_.exchange(std::move(snapshot), std::memory_order_acq_rel);
  version_.fetch_add(1, std::memory_order_acq_rel);
  const std::lock_guard lock(retired_mutex_);
  if (old) retired_.push_back(std::move(old));
}

void ExactIndexHub::collectRetired() {
  const std::lock_guard lock(retired_mutex_);
  std::erase_if(retired_, [](const auto& s) { return s.use_count() == 1; });
}

}  // namespace switchyard::fleet::kv_index
