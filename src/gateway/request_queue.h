// RequestQueue: one worker's waiting room, per model, for requests that found every replica of
// their model at its in-flight limit (docs/admission.md). Instead of a 429 at once, such a
// request waits here — bounded by count, by count per client (so no client can fill it) and by
// age — and is retried first come, first served as slots free up.
//
// Ownership and threads: one per worker, used from its thread only. A waiter lives in its
// request's coroutine frame and is linked into its model's list while it waits (no allocation
// per waiter; a model's queue and a client's count are allocated the first time they queue).
// Requests that are not queued never touch this object beyond one relaxed load of the model's
// `queued_workers` mask (in slotFreed()).
//
// Waking: only the head of a model's list routes again; the others only re-check their deadline
// and age. When a request on any worker of this gateway frees a slot, slotFreed() wakes the head
// on this worker if it has waiters for that model, else posts the wake to a worker that has
// (the model's `queued_workers` bits). Slots freed on other gateways are found by the head's own
// re-check every `recheck`.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/clock.h"
#include "fleet/fleet_snapshot.h"

namespace switchyard::fleet::kv_index {
class ExactIndexHub;
class RoutedChainExchange;
}  // namespace switchyard::fleet::kv_index

namespace switchyard::gateway {

class RequestQueue;

// The gateway's workers, so that a slot freed on one can wake a waiter on another. Filled before
// the workers start; read-only afterwards.
struct WorkerDirectory {
  std::vector<boost::asio::io_context*> contexts;
  std::vector<RequestQueue*> queues;
  // Precise prefix-cache routing's exact index (gateway/kv_events_plane.h); null: none.
  const fleet::kv_index::ExactIndexHub* exact_index = nullptr;
  // What the workers routed, for each other's approximate prefix indexes; null: not shared.
  fleet::kv_index::RoutedChainExchange* chain_exchange = nullptr;
};

class RequestQueue {
 public:
  struct ModelQueue;
  struct Waiter {
    explicit Waiter(const boost::asio::any_io_executor& executor) : timer(executor) {}
    boost::asio::steady_timer timer;  // its expiry is the next re-check; cancelled to wake
    std::string_view client;
    TimeNs enqueued_at = 0;
    size_t position = 0;  // waiters ahead of it (kept up to date by positionOf())
    // Intrusive list of the model's waiters, oldest first.
    Waiter* prev = nullptr;
    Waiter* next = nullptr;
    ModelQueue* queue = nullptr;  // set while queued
  };

  // One model's waiters on this worker.
  struct ModelQueue {
    std::string name;
    std::shared_ptr<fleet::ModelRuntime> runtime;
    Waiter* head = nullptr;
    Waiter* tail = nullptr;
    size_t size = 0;
    bool positions_dirty = false;
    std::unordered_map<std::string, uint32_t> per_client;
  };

  enum class Entry : uint8_t {
    kQueued,
    kFull,        // the model's queue on this worker is at max_queued
    kClientFull,  // this client already has max_queued_per_client waiting
  };

  RequestQueue(int worker_index, const WorkerDirectory& directory)
      : worker_index_(worker_index), directory_(directory) {}
  ~RequestQueue();
  RequestQueue(const RequestQueue&) = delete;
  RequestQueue& operator=(const RequestQueue&) = delete;

  // Whether requests of `model` wait on this worker (new ones then queue behind them).
  bool hasWaiters(const fleet::ModelEntry& model) const;
  Entry enter(const fleet::ModelEntry& model, Waiter& waiter, TimeNs now);
  // Takes the waiter out (it was admitted, refused or its client left) and wakes the next one
  // when it was the head, so that a freed slot is not lost.
  void leave(Waiter& waiter);
  bool isHead(const Waiter& waiter) const;
  // Waiters ahead of `waiter` in its model's queue.
  size_t positionOf(Waiter& waiter);

  // A request of `model` ended on this worker: one slot may be free. Cheap when nobody waits.
  void slotFreed(const fleet::ModelEntry& model);
  // Wakes the head of `model`'s queue on this worker (posted from another worker).
  void wakeHead(std::string_view model);

 private:
  int worker_index_;
  const WorkerDirectory& directory_;
  std::unordered_map<std::string, std::unique_ptr<ModelQueue>> queues_;
};

}  // namespace switchyard::gateway
