#include "fleet/kv_index/chain_exchange.h"

#include <algorithm>
#include <bit>
#include <stdexcept>

namespace switchyard::fleet::kv_index {

RoutedChainExchange::RoutedChainExchange(int workers, size_t ring_words)
    : workers_(workers),
      mask_(std::bit_ceil(std::max<uint64_t>(ring_words, 64)) - 1),
      stats_(std::make_unique<SenderStats[]>(static_cast<size_t>(std::max(workers, 0)))) {
  if (workers < 2) throw std::invalid_argument("a chain exchange needs at least two workers");
  rings_.reserve(static_cast<size_t>(workers * workers));
  for (int from = 0; from < workers; ++from) {
    for (int to = 0; to < workers; ++to) {
      auto ring = std::make_unique<Ring>();
      // Default-initialised: pages stay untouched (not resident) until messages use them.
      if (from != to) ring->words.reset(new uint64_t[mask_ + 1]);
      rings_.push_back(std::move(ring));
    }
  }
}

RoutedChainExchange::~RoutedChainExchange() = default;

size_t RoutedChainExchange::defaultRingWords(int workers) {
  const size_t senders = static_cast<size_t>(std::max(workers - 1, 1));
  return std::clamp<size_t>(std::bit_floor((size_t{1} << 17) / senders), 4096, 65536);
}

void RoutedChainExchange::publish(int from, const Routed& routed) {
  if (routed.replica == nullptr || routed.chain.empty()) return;
  SenderStats& stats = stats_[static_cast<size_t>(from)];
  Routed sent = routed;
  const size_t longest = (mask_ + 1) / 4 - kHeaderWords;
  if (sent.chain.size() > longest) {
    sent.chain = sent.chain.first(longest);
    stats.truncated.fetch_add(1, std::memory_order_relaxed);
  }
  for (int to = 0; to < workers_; ++to) {
    if (to == from) continue;
    if (ring(from, to).push(mask_, sent)) {
      stats.published.fetch_add(1, std::memory_order_relaxed);
    } else {
      stats.dropped.fetch_add(1, std::memory_order_relaxed);
    }
  }
}

bool RoutedChainExchange::Ring::push(uint64_t mask, const Routed& routed) {
  const uint64_t size = kHeaderWords + routed.chain.size();
  const uint64_t at = tail.load(std::memory_order_relaxed);
  const uint64_t offset = at & mask;
  // A message that would cross the ring's end starts at its beginning instead.
  const uint64_t pad = offset + size > mask + 1 ? mask + 1 - offset : 0;
  const uint64_t free = mask + 1 - (at - head.load(std::memory_order_acquire));
  if (pad + size > free) return false;
  uint64_t* message = &words[(at + pad) & mask];
  if (pad > 0) words[offset] = 0;
  message[0] = static_cast<uint64_t>(reinterpret_cast<uintptr_t>(routed.replica));
  message[1] = routed.fleet_version;
  message[2] = uint64_t{routed.capacity_blocks} << 32 | routed.chain.size();
  std::copy(routed.chain.begin(), routed.chain.end(), message + kHeaderWords);
  tail.store(at + pad + size, std::memory_order_release);
  return true;
}

uint64_t RoutedChainExchange::total(std::atomic<uint64_t> SenderStats::*counter) const {
  uint64_t sum = 0;
  for (int i = 0; i < workers_; ++i) sum += (stats_[i].*counter).load(std::memory_order_relaxed);
  return sum;
}

}  // namespace switchyard::fleet::kv_index
