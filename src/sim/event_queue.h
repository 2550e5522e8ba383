// EventQueue: the simulator's one queue of future events, in virtual time (Vidur / SimPy style).
//
// Events are small values: what happens (kind), to whom (target) and one argument. Order is by
// time, then by insertion: two events at the same instant run in the order they were scheduled,
// so a run is deterministic for a seed. A 4-ary implicit heap: push and pop are O(log n) with
// half the depth of a binary heap and its children on one cache line.
// Not thread-safe; one simulation owns one queue.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "core/clock.h"

namespace switchyard::sim {

struct Event {
  TimeNs time = 0;
  uint64_t order = 0;  // insertion sequence: the tie-break
  uint32_t kind = 0;
  uint32_t target = 0;
  uint64_t arg = 0;
};

class EventQueue {
 public:
  void push(TimeNs time, uint32_t kind, uint32_t target = 0, uint64_t arg = 0) {
    heap_.push_back(Event{time, next_order_++, kind, target, arg});
    siftUp(heap_.size() - 1);
  }
  bool empty() const { return heap_.empty(); }
  size_t size() const { return heap_.size(); }
  const Event& top() const { return heap_.front(); }
  Event pop() {
    Event out = heap_.front();
    heap_.front() = heap_.back();
    heap_.pop_back();
    if (!heap_.empty()) siftDown(0);
    return out;
  }
  uint64_t pushed() const { return next_order_; }

 private:
  static bool before(const Event& a, const Event& b) {
    return a.time < b.time || (a.time == b.time && a.order < b.order);
  }
  void siftUp(size_t i) {
    const Event e = heap_[i];
    while (i > 0) {
      const size_t parent = (i - 1) / 4;
      if (!before(e, heap_[parent])) break;
      heap_[i] = heap_[parent];
      i = parent;
    }
    heap_[i] = e;
  }
  void siftDown(size_t i) {
    const Event e = heap_[i];
    const size_t n = heap_.size();
    for (;;) {
      const size_t first = 4 * i + 1;
      if (first >= n) break;
      size_t best = first;
      const size_t last = std::min(first + 4, n);
      for (size_t c = first + 1; c < last; ++c) {
        if (before(heap_[c], heap_[best])) best = c;
      }
      if (!before(heap_[best], e)) break;
      heap_[i] = heap_[best];
      i = best;
    }
    heap_[i] = e;
  }

  std::vector<Event> heap_;
  uint64_t next_order_ = 0;
};

}  // namespace switchyard::sim
