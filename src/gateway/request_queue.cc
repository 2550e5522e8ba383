#include "gateway/request_queue.h"

#include <bit>
#include <boost/asio/post.hpp>

namespace switchyard::gateway {

RequestQueue::~RequestQueue() {
  for (auto& [name, queue] : queues_) {
    if (queue->size > 0) {
      queue->runtime->queued.fetch_sub(static_cast<int32_t>(queue->size),
                                       std::memory_order_relaxed);
      queue->runtime->queued_workers.fetch_and(~(uint64_t{1} << worker_index_),
                                               std::memory_order_relaxed);
    }
  }
}

bool RequestQueue::hasWaiters(const fleet::ModelEntry& model) const {
  if (model.runtime->queued_workers.load(std::memory_order_relaxed) == 0) return false;
  const auto it = queues_.find(model.name);
  return it != queues_.end() && it->second->size > 0;
}

RequestQueue::Entry RequestQueue::enter(const fleet::ModelEntry& model, Waiter& waiter,
                                        TimeNs now) {
  auto& slot = queues_[model.name];
  if (!slot) {
    slot = std::make_unique<ModelQueue>();
    slot->name = model.name;
  }
  ModelQueue& queue = *slot;
  queue.runtime = model.runtime;  // the same runtime across reloads of one model
  if (queue.size >= model.admission.max_queued) return Entry::kFull;
  uint32_t& mine = queue.per_client[std::string(waiter.client)];
  if (mine >= model.admission.max_queued_per_client) return Entry::kClientFull;
  ++mine;
  waiter.enqueued_at = now;
  waiter.queue = &queue;
  waiter.prev = queue.tail;
  waiter.next = nullptr;
  if (queue.tail) queue.tail->next = &waiter;
  queue.tail = &waiter;
  if (!queue.head) queue.head = &waiter;
  waiter.position = queue.size;
  ++queue.size;
  queue.runtime->queued.fetch_add(1, std::memory_order_relaxed);
  if (queue.size == 1) {
    queue.runtime->queued_workers.fetch_or(uint64_t{1} << worker_index_,
                                           std::memory_order_relaxed);
  }
  return Entry::kQueued;
}

void RequestQueue::leave(Waiter& waiter) {
  ModelQueue* queue = waiter.queue;
  if (queue == nullptr) return;
  const bool was_head = queue->head == &waiter;
  if (waiter.prev) waiter.prev->next = waiter.next;
  if (waiter.next) waiter.next->prev = waiter.prev;
  if (queue->head == &waiter) queue->head = waiter.next;
  if (queue->tail == &waiter) queue->tail = waiter.prev;
  waiter.prev = waiter.next = nullptr;
  waiter.queue = nullptr;
  --queue->size;
  queue->positions_dirty = true;
  if (auto it = queue->per_client.find(std::string(waiter.client));
      it != queue->per_client.end() && --it->second == 0) {
    queue->per_client.erase(it);
  }
  queue->runtime->queued.fetch_sub(1, std::memory_order_relaxed);
  if (queue->size == 0) {
    queue->runtime->queued_workers.fetch_and(~(uint64_t{1} << worker_index_),
                                             std::memory_order_relaxed);
  }
  // The next one tries at once: the slot this one took may not have been the only one free, and
  // a refused head must not leave a free slot unclaimed until the next re-check.
  if (was_head && queue->head) queue->head->timer.cancel();
}

bool RequestQueue::isHead(const Waiter& waiter) const {
  return waiter.queue != nullptr && waiter.queue->head == &waiter;
}

size_t RequestQueue::positionOf(Waiter& waiter) {
  ModelQueue* queue = waiter.queue;
  if (queue == nullptr) return 0;
  if (queue->positions_dirty) {
    // Renumbered once per change, not per waiter asking: O(queue) per departure at most.
    size_t i = 0;
    for (Waiter* w = queue->head; w; w = w->next) w->position = i++;
    queue->positions_dirty = false;
  }
  return waiter.position;
}

void RequestQueue::slotFreed(const fleet::ModelEntry& model) {
  const uint64_t mask = model.runtime->queued_workers.load(std::memory_order_relaxed);
  if (mask == 0) return;
  const uint64_t mine = uint64_t{1} << worker_index_;
  if (mask & mine) {
    wakeHead(model.name);
    return;
  }
  // Another worker of this gateway has waiters for the model: the first one set.
  const int other = std::countr_zero(mask);
  if (other >= static_cast<int>(directory_.queues.size())) return;
  boost::asio::post(*directory_.contexts[other],
                    [queue = directory_.queues[other], name = model.name] {
                      queue->wakeHead(name);
                    });
}

void RequestQueue::wakeHead(std::string_view model) {
  const auto it = queues_.find(std::string(model));
  if (it == queues_.end() || it->second->head == nullptr) return;
  it->second->head->timer.cancel();
}

}  // namespace switchyard::gateway
