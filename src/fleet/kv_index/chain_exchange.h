// RoutedChainExchange: how a gateway's workers tell each other where they routed a prompt, so
// that every worker's approximate prefix index learns from all of the gateway's traffic rather
// than from the connections the kernel happened to give it (docs/routing.md, "What the workers
// share").
//
// Each worker keeps its own index (fleet/kv_index/prefix_index.h: no locks on the hot path). A
// worker that routes a prompt publishes (replica, fleet version, the replica's bound, chain) to
// every other worker through a single-producer single-consumer ring per pair of workers; each
// worker drains its inbound rings before it routes a prompt and once a second. A ring without
// room drops the message (counted): the index is a hint, and a lost insert costs at most one
// prefill. A chain longer than a quarter of a ring is cut to that many leading blocks (still a
// prefix the replica holds).
//
// Lock-free and allocation-free after construction. A ring's memory is reserved untouched, so
// only what messages have used becomes resident.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

namespace switchyard::fleet::kv_index {

class RoutedChainExchange {
 public:
  // One routed prompt.
  struct Routed {
    const void* replica = nullptr;  // the replica's key in the index (never null)
    uint64_t fleet_version = 0;     // the fleet snapshot the decision was made on
    uint32_t capacity_blocks = 0;   // the replica's index bound, as the sender derived it
    std::span<const uint64_t> chain;
  };

  // `workers` >= 2; `ring_words`: each ring's size in 8-byte words (rounded up to a power of
  // two, at least 64).
  RoutedChainExchange(int workers, size_t ring_words);
  ~RoutedChainExchange();
  RoutedChainExchange(const RoutedChainExchange&) = delete;
  RoutedChainExchange& operator=(const RoutedChainExchange&) = delete;

  // The default ring size for `workers`: 2^17 words inbound per worker split over its senders,
  // rounded down to a power of two, within 4 Ki..64 Ki words per ring (inbound per worker:
  // 512 KiB with two workers, 512 KiB to 1 MiB with 3..33, 32 KiB per sender beyond).
  static size_t defaultRingWords(int workers);

  int workers() const { return workers_; }
  size_t ringWords() const { return mask_ + 1; }

  // On worker `from`'s thread only: sends `routed` to every other worker.
  void publish(int from, const Routed& routed);

  // On worker `to`'s thread only: calls visit(const Routed&) for each message sent to it since
  // the last drain, oldest first per sender; the chain is valid during the call. Returns the
  // number of messages.
  template <class Visit>
  size_t drain(int to, Visit&& visit) {
    size_t count = 0;
    for (int from = 0; from < workers_; ++from) {
      if (from != to) count += ring(from, to).drain(mask_, visit);
    }
    return count;
  }

  // Totals over all workers (relaxed reads, for metrics).
  // Messages written into a ring (one per receiving worker).
  uint64_t published() const { return total(&SenderStats::published); }
  uint64_t dropped() const { return total(&SenderStats::dropped); }  // a full ring had no room
  uint64_t truncated() const { return total(&SenderStats::truncated); }  // cut to a quarter ring

 private:
  struct Ring {
    alignas(64) std::atomic<uint64_t> tail{0};  // written by the sender
    alignas(64) std::atomic<uint64_t> head{0};  // written by the receiver
    alignas(64) std::unique_ptr<uint64_t[]> words;

    bool push(uint64_t mask, const Routed& routed);
    template <class Visit>
    size_t drain(uint64_t mask, Visit& visit);
  };
  struct alignas(64) SenderStats {
    std::atomic<uint64_t> published{0};
    std::atomic<uint64_t> dropped{0};
    std::atomic<uint64_t> truncated{0};
  };
  static constexpr uint64_t kHeaderWords = 3;  // replica, fleet version, bound << 32 | length

  uint64_t total(std::atomic<uint64_t> SenderStats::*counter) const;
  Ring& ring(int from, int to) { return *rings_[static_cast<size_t>(from * workers_ + to)]; }

  int workers_;
  uint64_t mask_;
  std::vector<std::unique_ptr<Ring>> rings_;  // [from * workers + to]
  std::unique_ptr<SenderStats[]> stats_;      // per sender
};

template <class Visit>
size_t RoutedChainExchange::Ring::drain(uint64_t mask, Visit& visit) {
  const uint64_t end = tail.load(std::memory_order_acquire);
  uint64_t at = head.load(std::memory_order_relaxed);
  size_t count = 0;
  while (at != end) {
    const uint64_t offset = at & mask;
    const uint64_t* message = &words[offset];
    if (message[0] == 0) {  // padding to the ring's end: messages never wrap
      at += mask + 1 - offset;
      continue;
    }
    const auto length = static_cast<uint32_t>(message[2]);
    Routed routed;
    routed.replica = reinterpret_cast<const void*>(static_cast<uintptr_t>(message[0]));
    routed.fleet_version = message[1];
    routed.capacity_blocks = static_cast<uint32_t>(message[2] >> 32);
    routed.chain = std::span<const uint64_t>(message + kHeaderWords, length);
    visit(routed);
    at += kHeaderWords + length;
    ++count;
  }
  head.store(at, std::memory_order_release);
  return count;
}

}  // namespace switchyard::fleet::kv_index
